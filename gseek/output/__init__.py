"""Output formats: SAM records and the SAM/BAM/CRAM writer (:mod:`.sam`; BAM and
CRAM through htslib, sorted and indexed, :mod:`.bam`; BGZF, :mod:`.bgzf`),
tabular rows and BLAST-style columns (:mod:`.tabular`), CIGAR text
(:mod:`.cigar`), and the Numba byte writers they share (:mod:`._text`).

Every formatter works on struct-of-arrays results in the same two steps:
size every row, prefix-sum the sizes, fill one byte buffer, so the text is
identical for any thread count and batch size. Output modules import stages
and their result types, never the pipeline or the CLI.
"""
