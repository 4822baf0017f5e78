# Nsight Compute on the gapped X-drop kernels of a BLAST search (issue 17): ecoli156 (megablast) against
# bacteria75, in process (benchmarks/archive/ncu_xdrop.py). First the search timed without ncu (twice), then one
# launch of xdrop_gapped_fill and one of xdrop_gapped_score profiled (speed of light, memory, warp states,
# occupancy, divergence). With .carry/old.tar, the old tree is profiled the same way first.
# usage: bash benchmarks/archive/ncu_xdrop.sh   (carry [".whl", ".carry/bacteria75.fa.gz", ".carry/ecoli.fa.gz"]; $OUT)
source benchmarks/archive/gpu_common.sh
if [ -f .carry/old.tar ]; then gpu_install old || exit 1; TREES="old new"; else gpu_install || exit 1; TREES=new; fi
W=/tmp/ncu; mkdir -p $W; ecoli156 $W/ecoli156.fa
DB=$R/.carry/bacteria75.fa.gz
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
 --section LaunchStats --section SchedulerStats --metrics smsp__thread_inst_executed_per_inst_executed.ratio,\
smsp__thread_inst_executed_per_inst_executed.pct,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,\
dram__bytes_read.sum,dram__bytes_write.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,\
l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
for tree in $TREES; do
  PYTHONPATH=/tmp/$tree:/tmp/site t python3 -P benchmarks/archive/ncu_xdrop.py $DB $W/ecoli156.fa megablast ${REPEAT:-2} \
    2>&1 | tee -a $OUT/$tree-times.txt
  for k in "xdrop_gapped_fill 0" "xdrop_gapped_score ${SKIP_SCORE:-8}"; do set -- $k
    PYTHONPATH=/tmp/$tree:/tmp/site timeout ${NCU_LIMIT:-150} $NCU --clock-control none -k regex:$1 --launch-skip $2 \
      --launch-count 1 $SECTIONS python3 -P benchmarks/archive/ncu_xdrop.py $DB $W/ecoli156.fa megablast 1 \
      > $OUT/$tree-$1.txt 2>&1; echo "ncu $tree $1 rc $?" | tee -a $OUT/times.txt
  done
done
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/device.txt"
