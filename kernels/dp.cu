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
// dp_walk follows the bits from the end cell to the start.
//
// On sm_90 (Hopper) the max operations use DPX: __vimax3_s32(_relu) for H and
// __vibmax_s32 for E/F, which returns the trace-back bit with the max.
// Every kernel is a grid-stride loop over slots: any grid gives the same result.

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;

#define GRID_STRIDE(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

#define NEG_INF (-(1 << 28))
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

// The sweep of one slot. STRIP rows at a time; NARROW: 16-bit work buffer;
// TB: write trace-back words. Returns the overflow flag.
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
    const int oe = o + e;
    int best = NEG_INF, bi = -1, bj = -1;
    if (local) { best = 0; bi = 0; bj = 0; }
    else if (qe) { best = ts ? 0 : -(o + n * e); bi = 0; bj = n; }
    int overflow = 0;
    const int n_strips = (m + STRIP - 1) / STRIP;
    for (int s = 0; s < n_strips; ++s) {
        const int i0 = s * STRIP + 1;
        const bool last = s + 1 == n_strips;
        int qc[STRIP], hl[STRIP], el[STRIP], rb[STRIP], rbj[STRIP];
        #pragma unroll
        for (int r = 0; r < STRIP; ++r) {
            int i = i0 + r;
            qc[r] = i <= m ? (int)codes[qo + i - 1] * alpha : 0;
            hl[r] = qs ? 0 : -(o + i * e);
            el[r] = NEG_INF;
            rb[r] = hl[r];
            rbj[r] = 0;
        }
        // H(i0 - 1, 0): the diagonal of (i0, 1).
        int diag = (i0 == 1) ? 0 : (qs ? 0 : -(o + (i0 - 1) * e));
        for (int j = 1; j <= n; ++j) {
            int up_h, up_f;
            if (s == 0) {
                up_h = ts ? 0 : -(o + j * e);
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
            const int tc = codes[to + j - 1];
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
        // End-cell candidates of this strip, in row order (ties: smallest i, then j).
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

// Append one column of `op` to the run-length CIGAR (written end-first).
__device__ __forceinline__ int push_op(u32* __restrict__ cigar, i64 base, int count, u32 op) {
    if (count > 0 && (cigar[base + count - 1] & 15u) == op) {
        cigar[base + count - 1] += 16u;
        return count;
    }
    cigar[base + count] = 16u | op;
    return count + 1;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dp_walk(const u8* __restrict__ codes, const i64* __restrict__ q_off, const int* __restrict__ q_len,
        const i64* __restrict__ t_off, const int* __restrict__ t_len, i64 n_slots, int flags, int no_match_code,
        const i64* __restrict__ tb_off, const u32* __restrict__ tb, const int* __restrict__ q_end,
        const int* __restrict__ t_end, const i64* __restrict__ cig_off, u32* __restrict__ cigar,
        int* __restrict__ out_n_cigar, int* __restrict__ out_q_start, int* __restrict__ out_t_start,
        int* __restrict__ out_matches, int* __restrict__ out_mismatches, int* __restrict__ out_gap_cols,
        int* __restrict__ out_gap_opens) {
    const bool local = flags & F_LOCAL;
    const bool qs = local || (flags & F_QS);
    const bool ts = local || (flags & F_TS);
    GRID_STRIDE(k, n_slots) {
        const int nn = t_len[k];
        const i64 base = tb_off[k / LANES] + k % LANES;
        const i64 cb = cig_off[k];
        const i64 qo = q_off[k], to = t_off[k];
        int i = q_end[k], j = t_end[k];
        int state = 0;  // 0: H, 1: E, 2: F
        int count = 0, matches = 0, mismatches = 0, gap_cols = 0, gap_opens = 0;
        u32 prev = 0;
        while (true) {
            if (state == 0 && (i == 0 || j == 0)) {
                if (i > 0 && !qs) {
                    for (int x = 0; x < i; ++x) count = push_op(cigar, cb, count, OP_I);
                    gap_cols += i; gap_opens += 1; i = 0;
                }
                if (j > 0 && !ts) {
                    for (int x = 0; x < j; ++x) count = push_op(cigar, cb, count, OP_D);
                    gap_cols += j; gap_opens += 1; j = 0;
                }
                break;
            }
            u32 word = tb[base + ((i64)((i - 1) / TB_STRIP) * nn + (j - 1)) * LANES];
            u32 bits = (word >> (4 * ((i - 1) % TB_STRIP))) & 15u;
            if (state == 1) {
                count = push_op(cigar, cb, count, OP_D);
                if (prev != OP_D) gap_opens += 1;
                prev = OP_D; gap_cols += 1;
                state = (bits & 4u) ? 1 : 0;
                j -= 1;
                continue;
            }
            if (state == 2) {
                count = push_op(cigar, cb, count, OP_I);
                if (prev != OP_I) gap_opens += 1;
                prev = OP_I; gap_cols += 1;
                state = (bits & 8u) ? 2 : 0;
                i -= 1;
                continue;
            }
            u32 src = bits & 3u;
            if (src == 3u) break;
            if (src == 0u) {
                int a = codes[qo + i - 1], b = codes[to + j - 1];
                if (a == b && a != no_match_code) { count = push_op(cigar, cb, count, OP_EQ); prev = OP_EQ; matches++; }
                else { count = push_op(cigar, cb, count, OP_X); prev = OP_X; mismatches++; }
                i -= 1; j -= 1;
            } else {
                state = src == 1u ? 1 : 2;
            }
        }
        for (i64 lo = cb, hi = cb + count - 1; lo < hi; ++lo, --hi) {
            u32 tmp = cigar[lo]; cigar[lo] = cigar[hi]; cigar[hi] = tmp;
        }
        out_n_cigar[k] = count;
        out_q_start[k] = i;
        out_t_start[k] = j;
        out_matches[k] = matches;
        out_mismatches[k] = mismatches;
        out_gap_cols[k] = gap_cols;
        out_gap_opens[k] = gap_opens;
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
