"""The steady state of `gseek pipeline --task megablast` in one process (`gpu_multi40.py --steady`): the BLAST
task built once per GPU set (database loaded once, uploaded once a GPU), then the engine over every query file
twice (the first pass with the searchers' first uses, the second warm), nvidia-smi sampled, outputs compared
with the reference run's. A set is 'GPUS[/database][#SEARCHERS_A_GPU]' ('cpu' for the CPU dry run)."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.suite.common import GpuSampler, count_rows, same_file


def _free_gpus() -> None:
    try:
        import cupy
    except ImportError:
        return
    for d in range(cupy.cuda.runtime.getDeviceCount()):
        with cupy.cuda.Device(d):
            cupy.cuda.Device(d).synchronize()
            cupy.get_default_memory_pool().free_all_blocks()


def steady_runs(spec: str, idx: str, files: list[Path], work: Path, reference: Path | None,
                over_budget: Callable[[], bool], record: dict, save: Callable[[], None],
                log: Callable[[str], None], busy_profile: Callable) -> None:
    import gseek.pipeline.tasks.blast as blast_module
    from gseek.index import Index
    from gseek.pipeline.engine import QueryFile

    index = Index.load(idx, device="cpu", parts=["text"])
    record.setdefault("steady", [])
    for k, one in enumerate(s for s in spec.split(";") if s):
        if over_budget():
            record["steady"].append({"set": one, "skipped": "out of time"})
            continue
        one_set, _, per_gpu = one.partition("#")
        gpus, _, split = one_set.partition("/")
        default = blast_module.BLAST_STREAMS_PER_GPU
        blast_module.BLAST_STREAMS_PER_GPU = int(per_gpu) if per_gpu else default
        try:
            t = time.perf_counter()
            devices = None if gpus == "cpu" else [f"gpu:{g}" for g in gpus.split(",")]
            task = blast_module.BlastTask(index, "megablast", devices=devices,
                                          device="cpu" if devices is None else None, split=split or "queries")
            built = time.perf_counter() - t
        finally:
            blast_module.BLAST_STREAMS_PER_GPU = default
        row = {"set": one, "build_s": built, "searchers": len(task.searchers), "passes": []}
        record["steady"].append(row)
        used = gpus.split(",") if devices else ["0"]
        for p in range(2):
            outdir = work / f"steady{k}-{p}"
            outdir.mkdir(parents=True, exist_ok=True)
            queries = [QueryFile((str(f),), str(outdir / f"{f.stem}.tsv")) for f in files]
            sampler = GpuSampler()
            t = time.perf_counter()
            try:
                results = task.dispatcher(workers=4).run(queries)
            finally:
                seconds = time.perf_counter() - t
                samples = sampler.stop()
            names = [f"{f.stem}.tsv" for f in files]
            differ = [n for n in names if reference is not None and not same_file(outdir / n, reference / n)]
            row["passes"].append({"seconds": seconds, "busy": busy_profile(samples, used),
                                  "ok": sum(r.status == "ok" for r in results),
                                  "hsps": sum(count_rows(outdir / n) for n in names if (outdir / n).is_file()),
                                  "identical": None if reference is None else not differ, "differ": differ})
            save()
            b = row["passes"][-1]
            log(f"steady {one} pass {p + 1}: {seconds:.2f} s (built in {built:.2f} s), busy "
                + ", ".join(f"{g} {v['mean']:.0f}%" for g, v in b["busy"].items() if v["mean"] is not None)
                + f", {b['hsps']:,} HSPs, identical {b['identical']}")
        del task
        gc.collect()
        _free_gpus()
