// dp: batched Gotoh DP (global / local / semiglobal) with 4-bit trace-back,
// and BLAST's ungapped X-drop extension.
//
// Twin: kernels/dp.py (same kernel names, same argument order).
// Reference: tests/reference_dp.py. Rules: docs/alignment.md.
// Constants from Python as -D options: BLOCK, SCORE_STRIP, TB_STRIP, LANES.
//
// Inter-sequence parallelism: one thread per pair ("slot"). The stage sorts
// slots by (strips, target length), longest first, so the 32 threads of a warp
// sweep matrices of the same shape. A thread sweeps its matrix in strips of
// STRIP query rows; inside a strip, H and E of every row live in registers
// and one column of STRIP cells is computed per target residue. Only the last
// row of a strip (H and F, the vertical gap state) goes to global memory, in
// a work buffer interleaved by lane: column j of slot k is at
//     grp_off[k / LANES] + (j * WORDS + w) * LANES + k % LANES
// so a warp's 32 loads of one column are one coalesced 128-byte access.
// 16-bit kernels store H|F packed in one 32-bit word (WORDS = 1) and flag a
// slot whose stored values leave [-32767, 32767]; the stage re-runs flagged
// slots with the 32-bit kernels (WORDS = 2). Registers are always 32-bit, so
// an unflagged 16-bit result is exact.
//
// Trace-back: 4 bits a cell (bits 0-1 source of H: 0 diagonal, 1 E, 2 F,
// 3 local stop; bit 2 E extends; bit 3 F extends). TB_STRIP = 8 rows of one
// column fill one 32-bit word, written once per column:
//     tb[tb_off[k / LANES] + (strip * n + j - 1) * LANES + k % LANES]
// dp_walk_count follows the bits from the end cell to the start and counts
// CIGAR runs; after a prefix sum, dp_walk walks again and writes the runs
// compactly (runs are built in registers, one store per run).
//
// Long pairs (see gseek.align.WARP_MIN_STRIPS): one warp per slot instead,
// the 32 lanes sweeping 32 strips as a wavefront (sweep_warp): same results,
// its own work and trace-back layout (tb_index); 27x the one-thread kernels'
// GCUPS at 10 kb on an H100, and faster from 1.5 kb on.
//
// On sm_90 (Hopper) the max operations use DPX: __vimax3_s32(_relu) for H and
// __vibmax_s32 for E/F, which returns the trace-back bit with the max.
// Every kernel is a grid-stride loop over slots: any grid gives the same result.

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE

#define NEG_INF (-(1 << 28))
#define NO_CAND (-2147483647 - 1)
#define INT16_LIMIT 32767
#define F_LOCAL 1
#define F_QS 2
#define F_QE 4
#define F_TS 8
#define F_TE 16
#define MAX_ALPHA 32

#define OP_I 1u
#define OP_D 2u
#define OP_EQ 7u
#define OP_X 8u

__device__ __forceinline__ int max3_i(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __vimax3_s32(a, b, c);
#else
    int x = a > b ? a : b;
    return x > c ? x : c;
#endif
}

__device__ __forceinline__ int max3_relu(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __vimax3_s32_relu(a, b, c);
#else
    int x = max3_i(a, b, c);
    return x > 0 ? x : 0;
#endif
}

// max(open, more); *extends = more > open (opening wins ties).
__device__ __forceinline__ int gap_max(int open, int more, bool* extends) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    bool open_wins;
    int v = __vibmax_s32(open, more, &open_wins);  // open_wins = open >= more
    *extends = !open_wins;
    return v;
#else
    *extends = more > open;
    return *extends ? more : open;
#endif
}

__device__ __forceinline__ bool fits16(int v) { return v <= INT16_LIMIT && v >= -INT16_LIMIT; }

// Copy the substitution table to shared memory (alpha <= MAX_ALPHA).
__device__ __forceinline__ void load_table(int* s_table, const int* __restrict__ table, int alpha) {
    for (int x = threadIdx.x; x < alpha * alpha; x += blockDim.x) s_table[x] = table[x];
    __syncthreads();
}

// One column of a strip: rows i0 .. i0 + STRIP - 1 at column j, from the
// cell above the strip (up_h, up_f) and H(i0 - 1, j - 1) (diag). Updates the
// strip's registers and leaves the strip's last row in (up_h, up_f).
// Returns the column's trace-back word (TB).
template <int STRIP, bool TB>
__device__ __forceinline__ u32 strip_column(int (&qc)[STRIP], int (&hl)[STRIP], int (&el)[STRIP], int (&rb)[STRIP],
                                            int (&rbj)[STRIP], int i0, int m, int j, int tc, int diag, int& up_h,
                                            int& up_f, const int* s_table, bool local, int o, int e) {
    const int oe = o + e;
    u32 word = 0;
    #pragma unroll
    for (int r = 0; r < STRIP; ++r) {
        bool e_ext, f_ext;
        int ecur = gap_max(hl[r] - oe, el[r] - e, &e_ext);
        int fcur = gap_max(up_h - oe, up_f - e, &f_ext);
        int d = diag + s_table[qc[r] + tc];
        int h = local ? max3_relu(d, ecur, fcur) : max3_i(d, ecur, fcur);
        if (TB) {
            u32 bits = (e_ext ? 4u : 0u) | (f_ext ? 8u : 0u);
            if (local && h == 0) bits |= 3u;
            else if (h == d) bits |= 0u;
            else if (h == ecur) bits |= 1u;
            else bits |= 2u;
            if (i0 + r <= m) word |= bits << (4 * r);
        }
        if (h > rb[r]) { rb[r] = h; rbj[r] = j; }
        diag = hl[r];
        hl[r] = h;
        el[r] = ecur;
        up_h = h;
        up_f = fcur;
    }
    return word;
}

// The strip's registers before column 1: query codes, column 0, row maxima.
template <int STRIP>
__device__ __forceinline__ void strip_start(int (&qc)[STRIP], int (&hl)[STRIP], int (&el)[STRIP], int (&rb)[STRIP],
                                            int (&rbj)[STRIP], const u8* __restrict__ codes, i64 qo, int i0, int m,
                                            int alpha, bool qs, int o, int e) {
    #pragma unroll
    for (int r = 0; r < STRIP; ++r) {
        int i = i0 + r;
        qc[r] = i <= m ? (int)codes[qo + i - 1] * alpha : 0;
        hl[r] = qs ? 0 : -(o + i * e);
        el[r] = NEG_INF;
        rb[r] = hl[r];
        rbj[r] = 0;
    }
}

// End-cell candidates of one strip, in row order, against (best, bi, bj):
// ties keep the earlier cell (smallest i, then j).
template <int STRIP>
__device__ __forceinline__ void strip_ends(const int (&hl)[STRIP], const int (&rb)[STRIP], const int (&rbj)[STRIP],
                                           int i0, int m, int n, bool local, bool qe, bool te, int& best, int& bi,
                                           int& bj) {
    #pragma unroll
    for (int r = 0; r < STRIP; ++r) {
        int i = i0 + r;
        if (i > m) break;
        if (local) {
            if (rb[r] > best) { best = rb[r]; bi = i; bj = rbj[r]; }
        } else if (i < m) {
            if (qe && hl[r] > best) { best = hl[r]; bi = i; bj = n; }
        } else if (te) {
            if (rb[r] > best) { best = rb[r]; bi = i; bj = rbj[r]; }
        } else if (qe) {
            if (hl[r] > best) { best = hl[r]; bi = i; bj = n; }
        } else {
            best = hl[r]; bi = i; bj = n;
        }
    }
}

// The end cell before any row: local (0, 0, 0); a free query end starts
// with row 0's last cell; otherwise none yet.
__device__ __forceinline__ void ends_start(int flags, int o, int e, int n, int& best, int& bi, int& bj) {
    const bool local = flags & F_LOCAL;
    const bool ts = local || (flags & F_TS);
    best = NEG_INF; bi = -1; bj = -1;
    if (local) { best = 0; bi = 0; bj = 0; }
    else if (flags & F_QE) { best = ts ? 0 : -(o + n * e); bi = 0; bj = n; }
}

// H(i0 - 1, 0): the diagonal of (i0, 1).
__device__ __forceinline__ int corner(int i0, bool qs, int o, int e) {
    return (i0 == 1) ? 0 : (qs ? 0 : -(o + (i0 - 1) * e));
}

// Row 0 at column j (the cell above strip 0).
__device__ __forceinline__ int row0(int j, bool ts, int o, int e) { return ts ? 0 : -(o + j * e); }

// The sweep of one slot by one thread. STRIP rows at a time; NARROW: 16-bit
// work buffer; TB: write trace-back words. Returns the overflow flag.
template <int STRIP, bool NARROW, bool TB>
__device__ __forceinline__ int sweep(const u8* __restrict__ codes, i64 qo, int m, i64 to, int n,
                                     const int* s_table, int alpha, int o, int e, int flags,
                                     i64 work_base, int* __restrict__ work, i64 tb_base, u32* __restrict__ tb,
                                     int* out_score, int* out_qend, int* out_tend) {
    const bool local = flags & F_LOCAL;
    const bool qs = local || (flags & F_QS);
    const bool ts = local || (flags & F_TS);
    const bool qe = flags & F_QE;
    const bool te = flags & F_TE;
    int best, bi, bj;
    ends_start(flags, o, e, n, best, bi, bj);
    int overflow = 0;
    const int n_strips = (m + STRIP - 1) / STRIP;
    for (int s = 0; s < n_strips; ++s) {
        const int i0 = s * STRIP + 1;
        const bool last = s + 1 == n_strips;
        int qc[STRIP], hl[STRIP], el[STRIP], rb[STRIP], rbj[STRIP];
        strip_start<STRIP>(qc, hl, el, rb, rbj, codes, qo, i0, m, alpha, qs, o, e);
        int diag = corner(i0, qs, o, e);
        for (int j = 1; j <= n; ++j) {
            int up_h, up_f;
            if (s == 0) {
                up_h = row0(j, ts, o, e);
                up_f = NEG_INF;
            } else if (NARROW) {
                u32 w = (u32)work[work_base + (i64)j * LANES];
                up_h = (int)(short)(w & 0xffffu);
                up_f = (int)(short)(w >> 16);
            } else {
                up_h = work[work_base + (i64)(2 * j) * LANES];
                up_f = work[work_base + (i64)(2 * j + 1) * LANES];
            }
            const int next_diag = up_h;
            u32 word = strip_column<STRIP, TB>(qc, hl, el, rb, rbj, i0, m, j, (int)codes[to + j - 1], diag, up_h,
                                               up_f, s_table, local, o, e);
            if (TB) tb[tb_base + ((i64)s * n + j - 1) * LANES] = word;
            if (!last) {
                if (NARROW) {
                    overflow |= !(fits16(up_h) && fits16(up_f));
                    work[work_base + (i64)j * LANES] = (int)(((u32)(up_h & 0xffff)) | ((u32)up_f << 16));
                } else {
                    work[work_base + (i64)(2 * j) * LANES] = up_h;
                    work[work_base + (i64)(2 * j + 1) * LANES] = up_f;
                }
            }
            diag = next_diag;
        }
        strip_ends<STRIP>(hl, rb, rbj, i0, m, n, local, qe, te, best, bi, bj);
    }
    *out_score = best;
    *out_qend = bi;
    *out_tend = bj;
    return overflow;
}

// The sweep of one slot by one warp (long pairs). Lane L owns strip
// p * 32 + L of pass p and computes column j = t - L + 1 at step t: the
// strips form a wavefront, and the cell above a strip (the last row of the
// strip before it, one column earlier in time) comes from lane L - 1 by a
// shuffle. Lane 0 of a pass reads the row above from the slot's work buffer
// (contiguous: column j at work[j] (NARROW) or work[2j], work[2j + 1]),
// which lane 31 of the previous pass wrote; the warp loads it 32 columns at
// a time, a block ahead. Trace-back words of pass p, step t, lane L at
//     tb[(p * (n + 31) + t) * 32 + L]
// (one coalesced store per step). The overflow flag covers every strip's
// last row but the matrix's, as the one-thread sweep's does.
template <int STRIP, bool NARROW, bool TB>
__device__ __forceinline__ int sweep_warp(const u8* __restrict__ codes, i64 qo, int m, i64 to, int n,
                                          const int* s_table, int alpha, int o, int e, int flags,
                                          int* __restrict__ work, u32* __restrict__ tb, int lane,
                                          int* out_score, int* out_qend, int* out_tend) {
    const unsigned FULL = 0xffffffffu;
    const bool local = flags & F_LOCAL;
    const bool qs = local || (flags & F_QS);
    const bool ts = local || (flags & F_TS);
    const bool qe = flags & F_QE;
    const bool te = flags & F_TE;
    int best, bi, bj;
    ends_start(flags, o, e, n, best, bi, bj);
    int overflow = 0;
    const int n_strips = (m + STRIP - 1) / STRIP;
    const int n_passes = (n_strips + 31) / 32;
    const int steps = n + 31;
    for (int p = 0; p < n_passes; ++p) {
        const int s = p * 32 + lane;
        const bool active = s < n_strips;
        const bool last = s + 1 >= n_strips;
        const int i0 = s * STRIP + 1;
        int qc[STRIP], hl[STRIP], el[STRIP], rb[STRIP], rbj[STRIP];
        strip_start<STRIP>(qc, hl, el, rb, rbj, codes, qo, i0, m, alpha, qs, o, e);
        int diag = corner(i0, qs, o, e);
        int out_h = 0, out_f = 0;  // this lane's last row at its previous column
        // Rows above the pass (p > 0): lane L holds column (block start + L + 1).
        int cur_h = 0, cur_f = 0, nxt_h = 0, nxt_f = 0;
        auto load_block = [&](int t0, int& h, int& f) {
            const int j = t0 + lane + 1;
            if (p > 0 && j <= n) {
                if (NARROW) {
                    u32 w = (u32)work[j];
                    h = (int)(short)(w & 0xffffu);
                    f = (int)(short)(w >> 16);
                } else {
                    h = work[2 * j];
                    f = work[2 * j + 1];
                }
            }
        };
        load_block(0, nxt_h, nxt_f);
        for (int t = 0; t < steps; ++t) {
            if ((t & 31) == 0) {
                cur_h = nxt_h; cur_f = nxt_f;
                // order this block's loads (columns t + 33 .. t + 64) before lane 31's
                // stores to them in later steps (the shuffles already do in practice)
                __syncwarp();
                load_block(t + 32, nxt_h, nxt_f);
            }
            const int in_h = __shfl_up_sync(FULL, out_h, 1);
            const int in_f = __shfl_up_sync(FULL, out_f, 1);
            const int blk_h = __shfl_sync(FULL, cur_h, t & 31);
            const int blk_f = __shfl_sync(FULL, cur_f, t & 31);
            const int j = t - lane + 1;
            if (active && j >= 1 && j <= n) {
                int up_h, up_f;
                if (s == 0) { up_h = row0(j, ts, o, e); up_f = NEG_INF; }
                else if (lane == 0) { up_h = blk_h; up_f = blk_f; }
                else { up_h = in_h; up_f = in_f; }
                const int next_diag = up_h;
                u32 word = strip_column<STRIP, TB>(qc, hl, el, rb, rbj, i0, m, j, (int)codes[to + j - 1], diag,
                                                   up_h, up_f, s_table, local, o, e);
                if (TB) tb[((i64)p * steps + t) * 32 + lane] = word;
                if (!last) {
                    if (NARROW) overflow |= !(fits16(up_h) && fits16(up_f));
                    if (lane == 31) {
                        if (NARROW) work[j] = (int)(((u32)(up_h & 0xffff)) | ((u32)up_f << 16));
                        else { work[2 * j] = up_h; work[2 * j + 1] = up_f; }
                    }
                }
                out_h = up_h;
                out_f = up_f;
                diag = next_diag;
            }
        }
        __syncwarp();
        // This pass's end cell: the first best in row order over its lanes.
        int lb = NO_CAND, li = -1, lj = -1;
        if (active) strip_ends<STRIP>(hl, rb, rbj, i0, m, n, local, qe, te, lb, li, lj);
        int wl = lane;
        #pragma unroll
        for (int d = 16; d > 0; d >>= 1) {
            int ob = __shfl_xor_sync(FULL, lb, d), oi = __shfl_xor_sync(FULL, li, d);
            int oj = __shfl_xor_sync(FULL, lj, d), ol = __shfl_xor_sync(FULL, wl, d);
            if (ob > lb || (ob == lb && ol < wl)) { lb = ob; li = oi; lj = oj; wl = ol; }
        }
        // global without free ends: row m's last cell is the one candidate, taken as it is
        const bool corner_only = !local && !qe && !te;
        if (lb > best || (corner_only && lb != NO_CAND)) { best = lb; bi = li; bj = lj; }
    }
    overflow = __any_sync(FULL, overflow);
    *out_score = best;
    *out_qend = bi;
    *out_tend = bj;
    return overflow;
}

#define SCORE_ARGS                                                                                       \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,           \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, i64 n_slots,                        \
        const int *__restrict__ table, int alpha, int gap_open, int gap_extend, int flags,                \
        const i64 *__restrict__ grp_off, int *__restrict__ work
#define OUT_ARGS \
    int *__restrict__ out_score, int *__restrict__ out_q_end, int *__restrict__ out_t_end, u8 *__restrict__ out_overflow

template <int STRIP, bool NARROW, bool TB>
__device__ __forceinline__ void run_slots(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb,
                                          OUT_ARGS) {
    __shared__ int s_table[MAX_ALPHA * MAX_ALPHA];
    load_table(s_table, table, alpha);
    GRID_STRIDE(k, n_slots) {
        const i64 lane = k % LANES, group = k / LANES;
        int score, qend, tend;
        int ov = sweep<STRIP, NARROW, TB>(codes, q_off[k], q_len[k], t_off[k], t_len[k], s_table, alpha, gap_open,
                                          gap_extend, flags, grp_off[group] + lane, work,
                                          TB ? tb_off[group] + lane : 0, tb, &score, &qend, &tend);
        out_score[k] = score;
        out_q_end[k] = qend;
        out_t_end[k] = tend;
        out_overflow[k] = (u8)ov;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) dp_score16(SCORE_ARGS, OUT_ARGS) {
    run_slots<SCORE_STRIP, true, false>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                        gap_extend, flags, grp_off, work, nullptr, nullptr, out_score, out_q_end,
                                        out_t_end, out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK) dp_score32(SCORE_ARGS, OUT_ARGS) {
    run_slots<SCORE_STRIP, false, false>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                         gap_extend, flags, grp_off, work, nullptr, nullptr, out_score, out_q_end,
                                         out_t_end, out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dp_fill16(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb, OUT_ARGS) {
    run_slots<TB_STRIP, true, true>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                    gap_extend, flags, grp_off, work, tb_off, tb, out_score, out_q_end, out_t_end,
                                    out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dp_fill32(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb, OUT_ARGS) {
    run_slots<TB_STRIP, false, true>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                     gap_extend, flags, grp_off, work, tb_off, tb, out_score, out_q_end, out_t_end,
                                     out_overflow);
}

// Warp-per-slot kernels: the same arguments, but grp_off / tb_off hold one
// offset per slot (the slot's own work buffer and trace-back words).
template <int STRIP, bool NARROW, bool TB>
__device__ __forceinline__ void run_warp_slots(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb,
                                               OUT_ARGS) {
    __shared__ int s_table[MAX_ALPHA * MAX_ALPHA];
    load_table(s_table, table, alpha);
    const int lane = threadIdx.x & 31;
    const i64 first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const i64 stride = ((i64)gridDim.x * blockDim.x) >> 5;
    for (i64 k = first; k < n_slots; k += stride) {
        int score, qend, tend;
        int ov = sweep_warp<STRIP, NARROW, TB>(codes, q_off[k], q_len[k], t_off[k], t_len[k], s_table, alpha,
                                               gap_open, gap_extend, flags, work + grp_off[k],
                                               TB ? tb + tb_off[k] : nullptr, lane, &score, &qend, &tend);
        if (lane == 0) {
            out_score[k] = score;
            out_q_end[k] = qend;
            out_t_end[k] = tend;
            out_overflow[k] = (u8)ov;
        }
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) dp_score16_warp(SCORE_ARGS, OUT_ARGS) {
    run_warp_slots<SCORE_STRIP, true, false>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                             gap_extend, flags, grp_off, work, nullptr, nullptr, out_score,
                                             out_q_end, out_t_end, out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK) dp_score32_warp(SCORE_ARGS, OUT_ARGS) {
    run_warp_slots<SCORE_STRIP, false, false>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                              gap_extend, flags, grp_off, work, nullptr, nullptr, out_score,
                                              out_q_end, out_t_end, out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dp_fill16_warp(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb, OUT_ARGS) {
    run_warp_slots<TB_STRIP, true, true>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                         gap_extend, flags, grp_off, work, tb_off, tb, out_score, out_q_end,
                                         out_t_end, out_overflow);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dp_fill32_warp(SCORE_ARGS, const i64* __restrict__ tb_off, u32* __restrict__ tb, OUT_ARGS) {
    run_warp_slots<TB_STRIP, false, true>(codes, q_off, q_len, t_off, t_len, n_slots, table, alpha, gap_open,
                                          gap_extend, flags, grp_off, work, tb_off, tb, out_score, out_q_end,
                                          out_t_end, out_overflow);
}

// CIGAR runs of a walk, built in registers: a run is stored when it ends.
// The walk goes end to start, so runs are written at `pos` counting down.
struct RunWriter {
    u32* cigar;
    i64 pos;
    u32 op;
    int len;
    int runs;
};

template <bool WRITE>
__device__ __forceinline__ void emit(RunWriter& w, u32 op) {
    if (op == w.op) { w.len += 1; return; }
    if (w.len > 0) {
        if (WRITE) w.cigar[w.pos] = ((u32)w.len << 4) | w.op;
        w.pos -= 1;
        w.runs += 1;
    }
    w.op = op;
    w.len = 1;
}

template <bool WRITE>
__device__ __forceinline__ void finish(RunWriter& w) {
    if (w.len > 0) {
        if (WRITE) w.cigar[w.pos] = ((u32)w.len << 4) | w.op;
        w.runs += 1;
    }
}

struct WalkStats {
    int q_start, t_start, matches, mismatches, gap_cols, gap_opens;
};

// Walk one slot's trace-back from (i, j) to its start. WRITE: store the runs
// ending at cigar[last]. Returns the number of runs.
// The trace-back word of strip s, column j: one thread's slot interleaved by
// lane (base = its group's offset + lane), or one warp's slot (base = its
// offset; see sweep_warp).
__device__ __forceinline__ i64 tb_index(bool warp, i64 base, int s, int j, int nn) {
    if (warp) return base + ((i64)(s >> 5) * (nn + 31) + (j - 1) + (s & 31)) * 32 + (s & 31);
    return base + ((i64)s * nn + (j - 1)) * LANES;
}

template <bool WRITE>
__device__ __forceinline__ int walk_one(const u8* __restrict__ codes, i64 qo, i64 to, int nn, int i, int j, bool qs, bool ts,
                        int no_match_code, bool warp, const u32* __restrict__ tb, i64 base, u32* cigar, i64 last,
                        WalkStats* st) {
    RunWriter w{cigar, last, 0u, 0, 0};
    int state = 0;  // 0: H, 1: E, 2: F
    int matches = 0, mismatches = 0, gap_cols = 0, gap_opens = 0;
    while (true) {
        if (state == 0 && (i == 0 || j == 0)) {
            if (i > 0 && !qs) {
                for (int x = 0; x < i; ++x) emit<WRITE>(w, OP_I);
                gap_cols += i; gap_opens += 1; i = 0;
            }
            if (j > 0 && !ts) {
                for (int x = 0; x < j; ++x) emit<WRITE>(w, OP_D);
                gap_cols += j; gap_opens += 1; j = 0;
            }
            break;
        }
        u32 word = tb[tb_index(warp, base, (i - 1) / TB_STRIP, j, nn)];
        u32 bits = (word >> (4 * ((i - 1) % TB_STRIP))) & 15u;
        if (state == 1) {
            if (w.op != OP_D) gap_opens += 1;
            emit<WRITE>(w, OP_D);
            gap_cols += 1;
            state = (bits & 4u) ? 1 : 0;
            j -= 1;
            continue;
        }
        if (state == 2) {
            if (w.op != OP_I) gap_opens += 1;
            emit<WRITE>(w, OP_I);
            gap_cols += 1;
            state = (bits & 8u) ? 2 : 0;
            i -= 1;
            continue;
        }
        u32 src = bits & 3u;
        if (src == 3u) break;
        if (src == 0u) {
            int a = codes[qo + i - 1], b = codes[to + j - 1];
            if (a == b && a != no_match_code) { emit<WRITE>(w, OP_EQ); matches++; }
            else { emit<WRITE>(w, OP_X); mismatches++; }
            i -= 1; j -= 1;
        } else {
            state = src == 1u ? 1 : 2;
        }
    }
    finish<WRITE>(w);
    *st = WalkStats{i, j, matches, mismatches, gap_cols, gap_opens};
    return w.runs;
}

#define WALK_ARGS                                                                                             \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,               \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, i64 n_slots, int flags, int no_match_code, \
        int warp, const i64 *__restrict__ tb_off, const u32 *__restrict__ tb, const int *__restrict__ q_end,            \
        const int *__restrict__ t_end

__device__ __forceinline__ i64 slot_base(bool warp, const i64* __restrict__ tb_off, i64 k) {
    return warp ? tb_off[k] : tb_off[k / LANES] + k % LANES;
}

// First pass of the walk: run counts, start cells, column counts. The stage
// turns the run counts into offsets (prefix sum) and dp_walk writes the runs.
extern "C" __global__ void __launch_bounds__(BLOCK)
dp_walk_count(WALK_ARGS, int* __restrict__ out_n_cigar, int* __restrict__ out_q_start,
              int* __restrict__ out_t_start, int* __restrict__ out_matches, int* __restrict__ out_mismatches,
              int* __restrict__ out_gap_cols, int* __restrict__ out_gap_opens) {
    const bool local = flags & F_LOCAL;
    const bool qs = local || (flags & F_QS);
    const bool ts = local || (flags & F_TS);
    GRID_STRIDE(k, n_slots) {
        WalkStats st;
        int runs = walk_one<false>(codes, q_off[k], t_off[k], t_len[k], q_end[k], t_end[k], qs, ts, no_match_code,
                                   warp, tb, slot_base(warp, tb_off, k), nullptr, 0, &st);
        out_n_cigar[k] = runs;
        out_q_start[k] = st.q_start;
        out_t_start[k] = st.t_start;
        out_matches[k] = st.matches;
        out_mismatches[k] = st.mismatches;
        out_gap_cols[k] = st.gap_cols;
        out_gap_opens[k] = st.gap_opens;
    }
}

// Second pass: slot k's n_cigar[k] runs (BAM encoding len << 4 | op, start to
// end) at cigar[cig_off[k] ...], compact.
extern "C" __global__ void __launch_bounds__(BLOCK)
dp_walk(WALK_ARGS, const int* __restrict__ n_cigar, const i64* __restrict__ cig_off, u32* __restrict__ cigar) {
    const bool local = flags & F_LOCAL;
    const bool qs = local || (flags & F_QS);
    const bool ts = local || (flags & F_TS);
    GRID_STRIDE(k, n_slots) {
        if (n_cigar[k] == 0) continue;
        WalkStats st;
        walk_one<true>(codes, q_off[k], t_off[k], t_len[k], q_end[k], t_end[k], qs, ts, no_match_code, warp, tb,
                       slot_base(warp, tb_off, k), cigar, cig_off[k] + n_cigar[k] - 1, &st);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_ungapped(const u8* __restrict__ codes, const i64* __restrict__ q_off, const int* __restrict__ q_len,
               const i64* __restrict__ t_off, const int* __restrict__ t_len, const int* __restrict__ q_pos,
               const int* __restrict__ t_pos, i64 n_slots, const int* __restrict__ table, int alpha, int xdrop,
               int* __restrict__ out_score, int* __restrict__ out_q_start, int* __restrict__ out_q_end) {
    __shared__ int s_table[MAX_ALPHA * MAX_ALPHA];
    load_table(s_table, table, alpha);
    GRID_STRIDE(k, n_slots) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k], m = q_len[k], n = t_len[k];
        int best_r = 0, run = 0, end = qp;
        for (int d = 0; qp + d < m && tp + d < n; ++d) {
            run += s_table[codes[qo + qp + d] * alpha + codes[to + tp + d]];
            if (run > best_r) { best_r = run; end = qp + d + 1; }
            else if (run < best_r - xdrop) break;
        }
        int best_l = 0, start = qp;
        run = 0;
        for (int d = 1; qp - d >= 0 && tp - d >= 0; ++d) {
            run += s_table[codes[qo + qp - d] * alpha + codes[to + tp - d]];
            if (run > best_l) { best_l = run; start = qp - d; }
            else if (run < best_l - xdrop) break;
        }
        out_score[k] = best_r + best_l;
        out_q_start[k] = start;
        out_q_end[k] = end;
    }
}

// ------------------------------------------------------------------ gapped X-drop
//
// One thread per seed; rules in docs/alignment.md, reference
// tests/reference_dp.py:xdrop_gapped. The seed pair is aligned; each side is
// a row-major DP from the seed (row i: query residue q_pos + step*i, column j:
// target residue t_pos + step*j; step -1 left, +1 right). A cell whose H is
// more than xdrop below the best so far is dropped (H = E = F = -inf). A row
// starts at the first live column of the row above and stops at the first
// dropped cell past that row's last live column. The row above (H, F) lives
// in the seed's slice of `work` (not interleaved). Trace-back: one byte per
// computed cell (the bits of the dp nibble), rows indexed by (first column,
// byte offset); sized by xdrop_gapped_score, written by xdrop_gapped_fill.
// `edge`: a live cell in the side's last target column (a longer target could
// extend the side: the caller's window may have cut it).

#define XD_ARGS                                                                                               \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,               \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, const int *__restrict__ q_pos,          \
        const int *__restrict__ t_pos, i64 n_slots, const int *__restrict__ table, int alpha, int gap_open,   \
        int gap_extend, int xdrop

struct SideBest {
    int best, bi, bj;
    i64 cells;
    bool edge;
};

// The end of a sweep's row i: its cells counted (and up to the best row), the side's edge,
// and the next row's range; true when the sweep stops (no live cell, or the stop row).
__device__ __forceinline__ bool xd_row_end(int i, i64 row_cells, int lo, int hi, int n, int stop_row, int bi,
                                           i64& cells, i64& cells_best, bool& edge, int& plo, int& phi) {
    cells += row_cells;
    if (bi == i) cells_best = cells;
    if (hi == n) edge = true;
    if (lo < 0 || i == stop_row) return true;
    plo = lo;
    phi = hi;
    return false;
}

template <bool WRITE>
__device__ SideBest xdrop_sweep(const u8* __restrict__ codes, i64 qo, i64 to, int qp, int tp, int step, int m, int n,
                                const int* s_table, int alpha, int o, int e, int xdrop, int* H, int* F, int stop_row,
                                u8* tb, i64 tb_base, int* row_start, i64* row_tb, i64 row_base) {
    const int oe = o + e;
    int best = 0, bi = 0, bj = 0;
    i64 cells = 0, cells_best = 0;
    int plo = 0, phi = -1;
    bool edge = false;
    for (int i = 0; i <= m; ++i) {
        int start, lo, hi, hleft, a = 0;
        i64 row_cells;
        if (i == 0) {
            H[0] = 0; F[0] = NEG_INF;
            start = 1; lo = 0; hi = 0; hleft = 0; row_cells = 1;
        } else {
            start = plo; lo = -1; hi = -1; hleft = NEG_INF; row_cells = 0;
            a = (int)codes[qo + qp + (i64)step * i] * alpha;
        }
        int erun = NEG_INF, diag = NEG_INF;
        if (WRITE) {
            row_start[row_base + i] = i == 0 ? 0 : start;
            row_tb[row_base + i] = tb_base + cells;
            if (i == 0) tb[tb_base] = 0;
        }
        for (int j = start; j <= n; ++j) {
            int up_h = NEG_INF, up_f = NEG_INF;
            if (j <= phi) { up_h = H[j]; up_f = F[j]; }
            u32 bits = 0;
            int ecur = NEG_INF, fcur = NEG_INF;
            bool ext;
            if (j > 0) { ecur = gap_max(hleft - oe, erun - e, &ext); if (ext) bits = 4u; }
            if (i > 0) { fcur = gap_max(up_h - oe, up_f - e, &ext); if (ext) bits |= 8u; }
            int d = (i > 0 && j > 0) ? diag + s_table[a + codes[to + tp + (i64)step * j]] : NEG_INF;
            int h = max3_i(d, ecur, fcur);
            if (h == d) bits |= 0u;
            else if (h == ecur) bits |= 1u;
            else bits |= 2u;
            if (WRITE) tb[tb_base + cells + row_cells] = (u8)bits;
            row_cells += 1;
            diag = up_h;
            if (h < best - xdrop) {
                H[j] = NEG_INF; F[j] = NEG_INF; hleft = NEG_INF; erun = NEG_INF;
                if (j > phi) break;
            } else {
                if (lo < 0) lo = j;
                hi = j;
                H[j] = h; F[j] = fcur; hleft = h; erun = ecur;
                if (h > best) { best = h; bi = i; bj = j; }
            }
        }
        if (xd_row_end(i, row_cells, lo, hi, n, stop_row, bi, cells, cells_best, edge, plo, phi)) break;
    }
    return SideBest{best, bi, bj, cells_best, edge};
}


// The same sweep by one warp per seed (xdrop_gapped_score_warp / _fill_warp):
// a row is computed 32 columns at a time, lane L at column c + L, with the
// same results and trace-back bytes for every cell a walk can reach
// (docs/alignment.md, "One warp per seed"). Per chunk: H~ = max(diagonal, F)
// from the row above; the row's E from an exclusive prefix max of
// H~[k] + k*e (a gap opened after column k; with gap_open >= 0 opening after a
// gap cell never beats extending it), so E is the recurrence's value without
// the drops inside the row; H = max3(diagonal, E, F); a cell is dropped when H
// is more than xdrop below the best so far (the previous rows' best and an
// exclusive prefix max of this row's H: a dropped cell never raises it). A
// value carried through a dropped cell is more than xdrop below the best, so
// every live cell's H, F and source bits, and every E on a path, equal the
// one-thread sweep's. The row ends at its first dropped cell past the last
// live column of the row above, or at the last column.
template <bool WRITE>
__device__ SideBest xdrop_sweep_warp(const u8* __restrict__ codes, i64 qo, i64 to, int qp, int tp, int step, int m,
                                     int n, const int* s_table, int alpha, int o, int e, int xdrop, int* H, int* F,
                                     int stop_row, u8* tb, i64 tb_base, int* row_start, i64* row_tb, i64 row_base,
                                     int lane) {
    const unsigned FULL = 0xffffffffu;
    const int oe = o + e;
    int best = 0, bi = 0, bj = 0;
    i64 cells = 0, cells_best = 0;
    int plo = 0, phi = -1;
    bool edge = false;
    for (int i = 0; i <= m; ++i) {
        int c, lo, hi, ch, ce, a = 0;
        i64 row_cells;
        if (i == 0) {
            if (lane == 0) { H[0] = 0; F[0] = NEG_INF; }
            c = 1; lo = 0; hi = 0; row_cells = 1; ch = 0; ce = NEG_INF;
        } else {
            c = plo; lo = -1; hi = -1; row_cells = 0; ch = NEG_INF; ce = NEG_INF;
            a = (int)codes[qo + qp + (i64)step * i] * alpha;
        }
        if (WRITE && lane == 0) {
            row_start[row_base + i] = i == 0 ? 0 : c;
            row_tb[row_base + i] = tb_base + cells;
            if (i == 0) tb[tb_base] = 0;
        }
        int cdiag = NEG_INF;
        while (c <= n) {
            const int j = c + lane;
            const bool valid = j <= n;
            int up_h = NEG_INF, up_f = NEG_INF;
            if (i > 0 && j <= phi) { up_h = H[j]; up_f = F[j]; }
            int diag = __shfl_up_sync(FULL, up_h, 1);
            if (lane == 0) diag = cdiag;
            int fcur = NEG_INF;
            bool fext = false;
            if (i > 0) fcur = gap_max(up_h - oe, up_f - e, &fext);
            const int d = (i > 0 && j > 0 && valid) ? diag + s_table[a + codes[to + tp + (i64)step * j]] : NEG_INF;
            bool ext;
            int e0 = gap_max(ch - oe, ce - e, &ext);
            if (c == 0) e0 = NEG_INF;  // column 0 has no E
            int run = (d > fcur ? d : fcur) + lane * e;
            for (int s = 1; s < 32; s <<= 1) {
                const int u = __shfl_up_sync(FULL, run, s);
                if (lane >= s && u > run) run = u;
            }
            const int before = __shfl_up_sync(FULL, run, 1);
            int ecur = e0;
            if (lane > 0) {
                const int from_chunk = before - oe - (lane - 1) * e, from_carry = e0 - lane * e;
                ecur = from_chunk > from_carry ? from_chunk : from_carry;
            }
            const int h = max3_i(d, ecur, fcur);
            int ph = __shfl_up_sync(FULL, h, 1), pe = __shfl_up_sync(FULL, ecur, 1);
            if (lane == 0) { ph = ch; pe = ce; }
            u32 bits = 0;
            if (j > 0) { gap_max(ph - oe, pe - e, &ext); if (ext) bits = 4u; }
            if (fext) bits |= 8u;
            if (h == d) bits |= 0u;
            else if (h == ecur) bits |= 1u;
            else bits |= 2u;
            int top = valid ? h : NEG_INF;  // best of this row's cells up to this lane
            for (int s = 1; s < 32; s <<= 1) {
                const int u = __shfl_up_sync(FULL, top, s);
                if (lane >= s && u > top) top = u;
            }
            int ahead = __shfl_up_sync(FULL, top, 1);
            if (lane == 0 || ahead < best) ahead = best;
            const bool live = h >= ahead - xdrop;
            const unsigned stops = __ballot_sync(FULL, valid && !live && j > phi);
            const unsigned valids = __ballot_sync(FULL, valid);
            const int last = stops ? __ffs(stops) - 1 : 31 - __clz(valids);
            const bool in = lane <= last;
            if (WRITE && in) tb[tb_base + cells + row_cells + lane] = (u8)bits;
            __syncwarp();
            if (in) {
                H[j] = live ? h : NEG_INF;
                F[j] = live ? fcur : NEG_INF;
            }
            const unsigned lives = __ballot_sync(FULL, in && live);
            if (lives) {
                if (lo < 0) lo = c + __ffs(lives) - 1;
                hi = c + 31 - __clz(lives);
            }
            int rmax = __shfl_sync(FULL, top, last);
            if (rmax > best) {
                const unsigned at = __ballot_sync(FULL, in && h == rmax);
                best = rmax; bi = i; bj = c + __ffs(at) - 1;
            }
            row_cells += last + 1;
            __syncwarp();
            if (stops || last < 31) break;
            ch = __shfl_sync(FULL, h, 31);
            ce = __shfl_sync(FULL, ecur, 31);
            cdiag = __shfl_sync(FULL, up_h, 31);
            c += 32;
        }
        if (xd_row_end(i, row_cells, lo, hi, n, stop_row, bi, cells, cells_best, edge, plo, phi)) break;
    }
    return SideBest{best, bi, bj, cells_best, edge};
}

// The bodies of the X-drop kernels, one thread a seed (WARP false: k the thread's slot, grid-stride)
// or one warp a seed (WARP true: k the warp's, lane 0 writes the results).
template <bool WARP, bool WRITE>
__device__ __forceinline__ SideBest xd_sweep(const u8* __restrict__ codes, i64 qo, i64 to, int qp, int tp, int step,
                                             int m, int n, const int* s_table, int alpha, int o, int e, int xdrop,
                                             int* H, int* F, int stop_row, u8* tb, i64 tb_base, int* row_start,
                                             i64* row_tb, i64 row_base, int lane) {
    if constexpr (WARP) {
        SideBest r = xdrop_sweep_warp<WRITE>(codes, qo, to, qp, tp, step, m, n, s_table, alpha, o, e, xdrop, H, F,
                                             stop_row, tb, tb_base, row_start, row_tb, row_base, lane);
        __syncwarp();
        return r;
    } else {
        return xdrop_sweep<WRITE>(codes, qo, to, qp, tp, step, m, n, s_table, alpha, o, e, xdrop, H, F, stop_row, tb,
                                  tb_base, row_start, row_tb, row_base);
    }
}

template <bool WARP>
__device__ __forceinline__ void xd_score_kernel(
    XD_ARGS, const i64* __restrict__ work_off, int* __restrict__ work, int* __restrict__ out_score,
    int* __restrict__ out_q_start, int* __restrict__ out_q_end, int* __restrict__ out_t_start,
    int* __restrict__ out_t_end, int* __restrict__ out_edges, i64* __restrict__ out_cells, int* __restrict__ out_rows) {
    __shared__ int s_table[MAX_ALPHA * MAX_ALPHA];
    load_table(s_table, table, alpha);
    const int lane = WARP ? (int)(threadIdx.x & 31) : 0;
    const i64 first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / (WARP ? 32 : 1);
    const i64 stride = (i64)gridDim.x * blockDim.x / (WARP ? 32 : 1);
    for (i64 k = first; k < n_slots; k += stride) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k];
        const int width = (tp > t_len[k] - tp - 1 ? tp : t_len[k] - tp - 1) + 1;
        int* H = work + work_off[k];
        int* F = H + width;
        SideBest l = xd_sweep<WARP, false>(codes, qo, to, qp, tp, -1, qp, tp, s_table, alpha, gap_open, gap_extend,
                                           xdrop, H, F, -1, nullptr, 0, nullptr, nullptr, 0, lane);
        SideBest r = xd_sweep<WARP, false>(codes, qo, to, qp, tp, 1, q_len[k] - qp - 1, t_len[k] - tp - 1, s_table,
                                           alpha, gap_open, gap_extend, xdrop, H, F, -1, nullptr, 0, nullptr, nullptr,
                                           0, lane);
        if (lane == 0) {
            out_score[k] = s_table[codes[qo + qp] * alpha + codes[to + tp]] + l.best + r.best;
            out_q_start[k] = qp - l.bi;
            out_t_start[k] = tp - l.bj;
            out_q_end[k] = qp + 1 + r.bi;
            out_t_end[k] = tp + 1 + r.bj;
            out_edges[k] = (l.edge ? 1 : 0) | (r.edge ? 2 : 0);
            out_cells[k] = l.cells + r.cells;
            out_rows[k] = l.bi + r.bi + 2;
        }
        if constexpr (WARP) __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_gapped_score(XD_ARGS, const i64* __restrict__ work_off, int* __restrict__ work, int* __restrict__ out_score,
                   int* __restrict__ out_q_start, int* __restrict__ out_q_end, int* __restrict__ out_t_start,
                   int* __restrict__ out_t_end, int* __restrict__ out_edges, i64* __restrict__ out_cells,
                   int* __restrict__ out_rows) {
    xd_score_kernel<false>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n_slots, table, alpha, gap_open,
                           gap_extend, xdrop, work_off, work, out_score, out_q_start, out_q_end, out_t_start,
                           out_t_end, out_edges, out_cells, out_rows);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_gapped_score_warp(XD_ARGS, const i64* __restrict__ work_off, int* __restrict__ work, int* __restrict__ out_score,
                        int* __restrict__ out_q_start, int* __restrict__ out_q_end, int* __restrict__ out_t_start,
                        int* __restrict__ out_t_end, int* __restrict__ out_edges, i64* __restrict__ out_cells,
                        int* __restrict__ out_rows) {
    xd_score_kernel<true>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n_slots, table, alpha, gap_open,
                          gap_extend, xdrop, work_off, work, out_score, out_q_start, out_q_end, out_t_start,
                          out_t_end, out_edges, out_cells, out_rows);
}

struct XdStats {
    int runs, matches, mismatches, gap_cols, gap_opens;
};

// CIGAR of one extension: the left walk (start to end, written forwards from
// base), the seed column, the right walk (end to start, written backwards
// from base + total - 1); a right run that continues the seed's run merges.
template <bool WRITE>
__device__ XdStats xdrop_walk(const u8* __restrict__ codes, i64 qo, i64 to, int qp, int tp, int no_match_code,
                              int bi_l, int bj_l, int bi_r, int bj_r, const u8* __restrict__ tb,
                              const int* __restrict__ row_start, const i64* __restrict__ row_tb, i64 rows,
                              u32* cigar, i64 base, int total) {
    int matches = 0, mismatches = 0, gap_cols = 0, gap_opens = 0;
    int runs_fwd = 0, runs_bwd = 0, len_bwd = 0;
    u32 last_fwd = 0, first_bwd = 0;
    for (int side = 0; side < 2; ++side) {
        int i, j, step;
        i64 row_base, pos;
        int dpos;
        if (side == 0) { i = bi_l; j = bj_l; step = -1; row_base = rows; pos = base; dpos = 1; }
        else { i = bi_r; j = bj_r; step = 1; row_base = rows + bi_l + 1; pos = base + total - 1; dpos = -1; }
        u32 run_op = 0;
        int run_len = 0, runs = 0, state = 0;
        while (true) {
            if (state == 0 && i == 0 && j == 0) break;
            u32 bits = tb[row_tb[row_base + i] + j - row_start[row_base + i]];
            u32 op;
            if (state == 1) {
                op = OP_D; state = (bits & 4u) ? 1 : 0; j -= 1;
            } else if (state == 2) {
                op = OP_I; state = (bits & 8u) ? 2 : 0; i -= 1;
            } else {
                u32 src = bits & 3u;
                if (src == 1u) { state = 1; continue; }
                if (src == 2u) { state = 2; continue; }
                int a = codes[qo + qp + (i64)step * i], b = codes[to + tp + (i64)step * j];
                if (a == b && a != no_match_code) { op = OP_EQ; matches++; }
                else { op = OP_X; mismatches++; }
                i -= 1; j -= 1;
            }
            if (op == OP_I || op == OP_D) {
                gap_cols += 1;
                if (op != run_op) gap_opens += 1;
            }
            if (op == run_op) { run_len += 1; continue; }
            if (run_len > 0) {
                if (WRITE) cigar[pos] = ((u32)run_len << 4) | run_op;
                pos += dpos;
                runs += 1;
            }
            run_op = op;
            run_len = 1;
        }
        if (side == 0) {
            int a = codes[qo + qp], b = codes[to + tp];
            u32 op;
            if (a == b && a != no_match_code) { op = OP_EQ; matches++; }
            else { op = OP_X; mismatches++; }
            if (op == run_op) run_len += 1;
            else {
                if (run_len > 0) {
                    if (WRITE) cigar[pos] = ((u32)run_len << 4) | run_op;
                    pos += dpos;
                    runs += 1;
                }
                run_op = op;
                run_len = 1;
            }
            if (WRITE) cigar[pos] = ((u32)run_len << 4) | run_op;
            runs_fwd = runs + 1;
            last_fwd = run_op;
        } else {
            runs_bwd = runs;
            if (run_len > 0) { runs_bwd += 1; first_bwd = run_op; len_bwd = run_len; }
        }
    }
    const bool merged = runs_bwd > 0 && first_bwd == last_fwd;
    if (WRITE && runs_bwd > 0) {
        if (merged) cigar[base + runs_fwd - 1] += (u32)len_bwd << 4;
        else cigar[base + runs_fwd] = ((u32)len_bwd << 4) | first_bwd;
    }
    return XdStats{runs_fwd + runs_bwd - (merged ? 1 : 0), matches, mismatches, gap_cols, gap_opens};
}

template <bool WARP>
__device__ __forceinline__ void xd_fill_kernel(
    XD_ARGS, int no_match_code, const i64* __restrict__ work_off, int* __restrict__ work,
    const int* __restrict__ q_start, const int* __restrict__ q_end, const int* __restrict__ t_start,
    const int* __restrict__ t_end, const i64* __restrict__ tb_off, u8* __restrict__ tb,
    const i64* __restrict__ row_off, int* __restrict__ row_start, i64* __restrict__ row_tb,
    int* __restrict__ out_n_cigar, int* __restrict__ out_matches, int* __restrict__ out_mismatches,
    int* __restrict__ out_gap_cols, int* __restrict__ out_gap_opens) {
    __shared__ int s_table[MAX_ALPHA * MAX_ALPHA];
    load_table(s_table, table, alpha);
    const int lane = WARP ? (int)(threadIdx.x & 31) : 0;
    const i64 first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / (WARP ? 32 : 1);
    const i64 stride = (i64)gridDim.x * blockDim.x / (WARP ? 32 : 1);
    for (i64 k = first; k < n_slots; k += stride) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k];
        const int width = (tp > t_len[k] - tp - 1 ? tp : t_len[k] - tp - 1) + 1;
        int* H = work + work_off[k];
        int* F = H + width;
        const int bi_l = qp - q_start[k], bj_l = tp - t_start[k];
        const int bi_r = q_end[k] - qp - 1, bj_r = t_end[k] - tp - 1;
        const i64 r0 = row_off[k];
        SideBest l = xd_sweep<WARP, true>(codes, qo, to, qp, tp, -1, qp, tp, s_table, alpha, gap_open, gap_extend,
                                          xdrop, H, F, bi_l, tb, tb_off[k], row_start, row_tb, r0, lane);
        xd_sweep<WARP, true>(codes, qo, to, qp, tp, 1, q_len[k] - qp - 1, t_len[k] - tp - 1, s_table, alpha,
                             gap_open, gap_extend, xdrop, H, F, bi_r, tb, tb_off[k] + l.cells, row_start, row_tb,
                             r0 + bi_l + 1, lane);
        if (lane == 0) {
            XdStats st = xdrop_walk<false>(codes, qo, to, qp, tp, no_match_code, bi_l, bj_l, bi_r, bj_r, tb,
                                           row_start, row_tb, r0, nullptr, 0, 0);
            out_n_cigar[k] = st.runs;
            out_matches[k] = st.matches;
            out_mismatches[k] = st.mismatches;
            out_gap_cols[k] = st.gap_cols;
            out_gap_opens[k] = st.gap_opens;
        }
        if constexpr (WARP) __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_gapped_fill(XD_ARGS, int no_match_code, const i64* __restrict__ work_off, int* __restrict__ work,
                  const int* __restrict__ q_start, const int* __restrict__ q_end, const int* __restrict__ t_start,
                  const int* __restrict__ t_end, const i64* __restrict__ tb_off, u8* __restrict__ tb,
                  const i64* __restrict__ row_off, int* __restrict__ row_start, i64* __restrict__ row_tb,
                  int* __restrict__ out_n_cigar, int* __restrict__ out_matches, int* __restrict__ out_mismatches,
                  int* __restrict__ out_gap_cols, int* __restrict__ out_gap_opens) {
    xd_fill_kernel<false>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n_slots, table, alpha, gap_open,
                          gap_extend, xdrop, no_match_code, work_off, work, q_start, q_end, t_start, t_end, tb_off,
                          tb, row_off, row_start, row_tb, out_n_cigar, out_matches, out_mismatches, out_gap_cols,
                          out_gap_opens);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_gapped_fill_warp(XD_ARGS, int no_match_code, const i64* __restrict__ work_off, int* __restrict__ work,
                       const int* __restrict__ q_start, const int* __restrict__ q_end, const int* __restrict__ t_start,
                       const int* __restrict__ t_end, const i64* __restrict__ tb_off, u8* __restrict__ tb,
                       const i64* __restrict__ row_off, int* __restrict__ row_start, i64* __restrict__ row_tb,
                       int* __restrict__ out_n_cigar, int* __restrict__ out_matches, int* __restrict__ out_mismatches,
                       int* __restrict__ out_gap_cols, int* __restrict__ out_gap_opens) {
    xd_fill_kernel<true>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n_slots, table, alpha, gap_open,
                         gap_extend, xdrop, no_match_code, work_off, work, q_start, q_end, t_start, t_end, tb_off,
                         tb, row_off, row_start, row_tb, out_n_cigar, out_matches, out_mismatches, out_gap_cols,
                         out_gap_opens);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
xdrop_gapped_walk(const u8* __restrict__ codes, const i64* __restrict__ q_off, const i64* __restrict__ t_off,
                  const int* __restrict__ q_pos, const int* __restrict__ t_pos, i64 n_slots, int no_match_code,
                  const int* __restrict__ q_start, const int* __restrict__ q_end, const int* __restrict__ t_start,
                  const int* __restrict__ t_end, const u8* __restrict__ tb, const i64* __restrict__ row_off,
                  const int* __restrict__ row_start, const i64* __restrict__ row_tb, const int* __restrict__ n_cigar,
                  const i64* __restrict__ cig_off, u32* __restrict__ cigar) {
    GRID_STRIDE(k, n_slots) {
        const int qp = q_pos[k], tp = t_pos[k];
        const int bi_l = qp - q_start[k];
        xdrop_walk<true>(codes, q_off[k], t_off[k], qp, tp, no_match_code, bi_l, tp - t_start[k], q_end[k] - qp - 1,
                         t_end[k] - tp - 1, tb, row_start, row_tb, row_off[k], cigar, cig_off[k], n_cigar[k]);
    }
}
