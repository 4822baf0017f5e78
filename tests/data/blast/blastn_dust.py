"""Print blastn's DUST intervals of every record of a FASTA file, in dustmasker's ``-outfmt interval``
form (``>name``, then ``start - end`` lines, 0-based inclusive): the query masks of blastn's
``-outfmt 11`` archive (BLAST+ 2.12), with the DUST options given after the file name.

    python blastn_dust.py dust_n.fa > dust_n_blastn.txt
    python blastn_dust.py dust.fa -dust "20 32 1" > dust_window32_blastn.txt

blastn runs twice (``-outfmt 11``, then ``6`` for its warnings), megablast against db.fa (the masks do not depend on the subject),
``-parse_deflines`` so that the masks name the records. A record that blastn does not search
(masked whole, or all N: "Could not calculate ungapped Karlin-Altschul parameters") has no masks
in the archive: it is printed with a ``# not searched`` line, and the tests leave it out."""

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def names(path: str) -> list[str]:
    return [line[1:].split()[0] for line in Path(path).read_text().splitlines() if line.startswith(">")]


def main() -> None:
    fasta, options = sys.argv[1], sys.argv[2:]
    command = ["blastn", "-task", "megablast", "-query", fasta, "-subject", str(HERE / "db.fa"), "-parse_deflines",
               *options]
    run = subprocess.run([*command, "-outfmt", "11"], capture_output=True, text=True, check=True)
    warned = subprocess.run([*command, "-outfmt", "6"], capture_output=True, text=True, check=True).stderr
    masks: dict[str, set[tuple[int, int]]] = {}
    for part in run.stdout.split("masks {")[1:]:  # one per batch of queries
        for start, end, name in re.findall(r'from (\d+),\s*to (\d+),\s*id local str "([^"]*)"',
                                           part[:part.find("ka-blocks")]):
            masks.setdefault(name, set()).add((int(start), int(end)))
    unsearched = set(re.findall(r"Warning: \[blastn\] (\S+): Could not calculate", warned))
    for name in names(fasta):
        print(f">{name}")
        if name in unsearched:
            print("# not searched")
        for start, end in sorted(masks.get(name, ())):
            print(f"{start} - {end}")


if __name__ == "__main__":
    main()
