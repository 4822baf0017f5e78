#!/bin/bash
# Issue 36 §4: one 50 Mbp random query, megablast and blastn against lambda, peak RSS and times of gseek
# A (a checkout given as PYTHONPATH=$BASE) and B (the installed gseek) beside blastn, the same threads,
# alternated ROUNDS times. usage: bench_50m_query.sh QUERY.fa GSEEK_INDEX BLAST_DB BASE_TREE [ROUNDS=2] [TASKS]
set -u
q=$1; idx=$2; db=$3; base=$4; rounds=${5:-2}; tasks=${6:-megablast}
py=${PYTHON:-python}
fmt='%e s wall, %U s user, %M KB peak RSS'
for r in $(seq $rounds); do
  for t in $tasks; do
    echo "round $r $t A (base): $( (cd /tmp && PYTHONPATH=$base /usr/bin/time -f "$fmt" $py -m gseek --device cpu --quiet \
      search -x $idx --task $t -q $q -o /tmp/bench50m_A_$t.tsv --threads 2) 2>&1 | tail -1)"
    echo "round $r $t B (this): $( (/usr/bin/time -f "$fmt" $py -m gseek --device cpu --quiet \
      search -x $idx --task $t -q $q -o /tmp/bench50m_B_$t.tsv --threads 2) 2>&1 | tail -1)"
    if [ $r = 1 ]; then
      echo "round $r $t blastn: $( (/usr/bin/time -f "$fmt" blastn -task $t -query $q -db $db -outfmt 6 \
        -num_threads 2 -out /tmp/bench50m_blastn_$t.tsv) 2>&1 | tail -1)"
    fi
    cmp /tmp/bench50m_A_$t.tsv /tmp/bench50m_B_$t.tsv && echo "round $r $t: A and B outputs identical"
  done
done
