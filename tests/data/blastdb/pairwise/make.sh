#!/usr/bin/env bash
# blastn -outfmt 0 (the pairwise report) and -html golden files for tests/test_blast_pairwise.py
# (BLAST+ 2.12.0, Debian's ncbi-blast+ 2.12.0+ds-3+b1). Run from this folder; the databases are made in a
# scratch folder: ../ (tests/data/blastdb: db.fa, many.fa, queries.fa, v4.*, mv.*, both.nal) and the lambda genome.
set -euo pipefail
here=$(pwd); data=$(cd .. && pwd); blast=$(cd ../../blast && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cp "$data"/db.fa "$data"/many.fa "$data"/queries.fa "$data"/v4.* "$data"/mv.* "$data"/both.nal "$tmp"
python3 -c 'from gseek.datasets import lambda_genome; print(lambda_genome())' | xargs -I{} cp {} "$tmp/lambda.fa"
cd "$tmp"
makeblastdb -in db.fa -dbtype nucl -out ps -parse_seqids > /dev/null
makeblastdb -in lambda.fa -dbtype nucl -out lambda > /dev/null
# lambda queries: minus strand, gaps, DUST-masked (lowercase) bases, two HSPs, no hits (search_queries.fa)
awk '/^>/{p=($1==">q06"||$1==">q09"||$1==">q12"||$1==">q17"||$1==">h_lower"||$1==">h_polya"||$1==">h_chimera"||
     $1==">h_minus"||$1==">h_short"||$1==">h_lowcomp")} p' "$blast"/search_queries.fa > "$here"/lambda_queries.fa
# queries made of pieces of several subjects (the descriptions' and alignments' limits, the order)
python3 - "$here"/chimera.fa <<'PY'
import sys
def records(path):
    out, name = {}, None
    for line in open(path):
        if line.startswith(">"):
            name = line[1:].split()[0]; out[name] = []
        else:
            out[name].append(line.strip())
    return {k: "".join(v) for k, v in out.items()}
s = {**records("db.fa"), **records("many.fa")}
with open(sys.argv[1], "w") as fh:
    fh.write(">five pieces of five subjects\n" + "".join(s[f"seq{i}"][200 + 40 * i:320 + 60 * i] for i in range(5)) + "\n")
    fh.write(">three_and_minus\n" + s["seq7"][100:400] + s["contig_7"][800:1000][::-1].translate(str.maketrans("ACGT", "TGCA")) + s["seq9"][50:200] + "\n")
PY
E="-evalue 1e-5"
blastn -query queries.fa -db v4 $E > "$here"/v4.txt
blastn -query queries.fa -db ps $E > "$here"/ps.txt
blastn -query queries.fa -db ps $E -html > "$here"/ps.html
blastn -query queries.fa -subject db.fa $E -html > "$here"/subject.html
blastn -query "$here"/lambda_queries.fa -db lambda > "$here"/lambda_megablast.txt
blastn -query "$here"/lambda_queries.fa -db lambda -task blastn $E -html > "$here"/lambda_blastn.html
blastn -query "$here"/chimera.fa -db both $E -num_descriptions 3 -num_alignments 1 -line_length 50 > "$here"/both_limits.txt 2> /dev/null
blastn -query "$here"/chimera.fa -db both -max_target_seqs 2 > "$here"/both_max2.txt 2> /dev/null
# titles with punctuation, entities, runs of blanks, words longer than a line (the wrapping, HTML's encoding)
awk '/^>/{n++; if (n == 1) print ">q1 A \"quoted\" title & more <tags> with punctuation: a/b/c; x(y)z, " \
  "long-hyphenated-words and_underscores_here.dots.many.more text text text"; if (n == 2) print ">q4 " \
  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx  yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy   zzzzzzzzzzzzzzzzzzzz (paren" \
  "pppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppppp|ab|ab,cd,ef-gh"; if (n == 3) {
  printf ">q5 "; for (i = 0; i < 30; i++) printf "|ab.cd"; print ""}; next} n <= 3' \
  queries.fa > "$here"/titles.fa
blastn -query "$here"/titles.fa -db v4 $E -html > "$here"/titles.html
blastn -query "$here"/titles.fa -db v4 $E > "$here"/titles.txt
cp "$here"/chimera.fa "$here"/titles.fa .  # (-subject and its title name the files as given)
blastn -query titles.fa -subject titles.fa $E -html > "$here"/titles_subject.html
blastn -query chimera.fa -subject db.fa -subject_loc 701-1100 -query_loc 31-480 -task blastn $E > "$here"/subject_loc.txt
