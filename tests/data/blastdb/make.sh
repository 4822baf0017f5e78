#!/usr/bin/env bash
# BLAST database fixtures for tests/test_blastdb.py (BLAST+ 2.12.0, Debian's ncbi-blast+ 2.12.0+ds-3+b1).
set -euo pipefail
cd "$(dirname "$0")"
python3 make_inputs.py
makeblastdb -in db.fa -dbtype nucl -out v4 -blastdb_version 4
makeblastdb -in db.fa -dbtype nucl -out v5ps -parse_seqids
makeblastdb -in many.fa -dbtype nucl -out mv -max_file_sz 4000 -blastdb_version 4
printf 'TITLE both\nDBLIST v4 mv\n' > both.nal
F="6 std sseqid sacc stitle salltitles"
for db in v4 v5ps mv both; do blastn -query queries.fa -db $db -outfmt "$F" > $db.blastn.tsv; done
rm -f v5ps.ndb v5ps.nos v5ps.not v5ps.ntf v5ps.nto v5ps.nog v5ps.nnd v5ps.nni v4.n?[dgi] 2>/dev/null || true
# Hard-masked statistics (test_blast_karlin.py): queries whose κ λ H digits change with the base just past a
# masked interval (make_hard_mask_stats.py needs gseek importable: the project's venv)
python3 make_hard_mask_stats.py
blastn -task blastn -reward 1 -penalty -2 -soft_masking false -lcase_masking -dust no -query hard_mask_stats.fa \
  -subject db.fa -evalue 1e-5 -outfmt 15 > hard_mask_stats_lc.json
blastn -task megablast -ungapped -soft_masking false -query hard_mask_stats.fa -subject db.fa -evalue 1e-5 \
  -outfmt 5 > hard_mask_stats_dust.xml
# Queries blastn cannot score (no letter, ambiguous letters only, all hard-masked; test_blast_plus_edges.py): with a
# query it scores (unscored.fa), and none (unscored_all.fa: its first four records)
A="-subject db.fa -lcase_masking -soft_masking false -evalue 1e-5"
for f in 5:xml 15:json 0:txt; do blastn -query unscored.fa $A -outfmt ${f%%:*} > unscored.${f##*:}; done
blastn -query unscored.fa $A -ungapped > unscored_ungapped.txt
blastn -query unscored_all.fa $A -outfmt 15 > unscored_all.json
blastn -query unscored_all.fa $A > unscored_all.txt
