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
