"""Write n_run_more_queries.fa: slices of the lambda genome with runs of N (issue 36), for blastn's
golden HSPs in README.md. ``g`` is the genome's one-line sequence (datasets/data/lambda_virus.fa);
each record is written as the slices and runs below, so the file is deterministic."""

from pathlib import Path

HERE = Path(__file__).resolve().parent
GENOME = HERE.parents[2] / "datasets" / "data" / "lambda_virus.fa"


def main() -> None:
    g = "".join(line.strip() for line in GENOME.read_text().splitlines() if not line.startswith(">"))
    records = {}
    for k in (1, 5, 10, 20):  # the run lengths, 300 bases in
        records[f"mid_N{k}"] = g[5000:5300] + "N" * k + g[5300:5650]
    for at in (30, 100, 600):  # one run of 40 at several distances from the start
        records[f"at{at}_N40"] = g[8000:8000 + at] + "N" * 40 + g[8000 + at:8700]
    records["start_N30"] = "N" * 30 + g[12000:12400]
    records["end_N30"] = g[12500:12900] + "N" * 30
    records["both_ends_N12"] = "N" * 12 + g[14000:14500] + "N" * 12
    records["three_runs"] = (g[30000:30300] + "N" * 20 + g[30300:30500] + "N" * 5 + g[30500:30800] + "N" * 50
                             + g[30800:31050])
    records["polyA_N"] = g[40000:40300] + "A" * 70 + "N" * 10 + g[40300:40600]  # the masker reads again
    (HERE / "n_run_more_queries.fa").write_text("".join(f">{name}\n{seq}\n" for name, seq in records.items()))


if __name__ == "__main__":
    main()
