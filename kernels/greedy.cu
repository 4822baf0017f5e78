// greedy: megablast's greedy gapped extension (BLAST+'s non-affine BLAST_GreedyAlign), one
// thread a seed (grid-stride).
//
// Twin: kernels/greedy.py (same kernel names, same argument order; its docstrings state the
// rules, docs/blast.md "Megablast's greedy extension" the why). Reference:
// tests/reference_greedy.py. Scores at twice the scale: match = 2 * reward, mismatch =
// -2 * penalty (a positive cost), xdrop doubled.
//
// A side runs outwards from the seed (the right side from the seed pair, step +1; the left
// side from the pair before it, step -1). Row d holds, for each diagonal k (query offset
// minus subject offset) in range, the furthest subject offset of distance d, in a ring of
// `width` entries (a power of two; k & (width - 1)); the best score of each distance in a
// ring of `memory` entries.

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE

#define G_INVALID (-2)
#define G_SUB 0
#define G_INS 1
#define G_DEL 2
#define EDGE_LEFT 1
#define EDGE_RIGHT 2
#define G_OVERFLOW 4

struct GSide {
    int dist, len1, len2, diag, seed_q, seed_s, seed_len;
    bool edge;
    i64 cells;
    bool overflow;
};

__device__ __forceinline__ int g_slide(const u8* __restrict__ codes, i64 b1, i64 b2, int step, int i, int j,
                                       int len1, int len2) {
    int n = 0;
    while (i + n < len1 && j + n < len2) {
        const u8 a = codes[b1 + (i64)step * (i + n)];
        if (a > 3 || a != codes[b2 + (i64)step * (j + n)]) break;
        ++n;
    }
    return n;
}

// The four invalid offsets written around the range [lower, upper] of the row about to be read.
__device__ __forceinline__ void g_sentinels(int* prev, int mask, int lower, int upper) {
    prev[(lower - 1) & mask] = G_INVALID;
    prev[lower & mask] = G_INVALID;
    prev[upper & mask] = G_INVALID;
    prev[(upper + 1) & mask] = G_INVALID;
}

// The least extent a live point of distance d may have: the ceiling of (the best score of distance
// d - offset + cost * d - xdrop) / half (Python's -((-x) // half)).
__device__ __forceinline__ i64 g_floor(const int* best_at, int rmask, int d, int offset, int cost, int xdrop,
                                       int half) {
    const i64 fl = (i64)(d < offset ? 0 : best_at[(d - offset) & rmask]) + (i64)cost * d - xdrop;
    const i64 q = fl / half, r = fl % half;
    return (r != 0 && ((r > 0) == (half > 0))) ? q + 1 : q;
}

// One side (kernels/greedy.py: _side). With WRITE, runs to distance `stop`, copying row d - 1
// (after its sentinels) into tb and indexing it in row_lo / row_tb.
template <bool WRITE>
__device__ GSide g_side(const u8* __restrict__ codes, i64 b1, i64 b2, int step, int len1, int len2, int match,
                        int mismatch, int xdrop, int* prev, int* cur, int width, int* best_at, int memory, int stop,
                        int* tb, i64 tb_base, int* row_lo, i64* row_tb, i64 row_base) {
    const int half = match / 2;
    const int cost = match + mismatch;
    const int offset = (xdrop + half) / cost + 1;
    const int mask = width - 1, rmask = memory - 1;
    const int first = g_slide(codes, b1, b2, step, 0, 0, len1, len2);
    int seed_q = 0, seed_s = 0, seed_len = first;
    if (first == len1 || first == len2 || (WRITE && stop <= 0))
        return GSide{0, first, first, 0, seed_q, seed_s, seed_len, first == len2, 0, false};
    prev[0] = first;
    best_at[0] = first * match;
    int lower = -1, upper = 1;
    bool end1 = false, end2 = false;
    int best_dist = 0, best_diag = 0, best_len2 = first;
    i64 cells = 0, cells_best = 0;
    for (int d = 1;; ++d) {
        if (upper - lower + 5 > width)
            return GSide{best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2,
                         cells_best, true};
        g_sentinels(prev, mask, lower, upper);
        if (WRITE) {
            row_lo[row_base + d - 1] = lower - 1;
            row_tb[row_base + d - 1] = tb_base + cells;
            for (int k = lower - 1; k <= upper + 1; ++k) tb[tb_base + cells + k - lower + 1] = prev[k & mask];
        }
        cells += upper - lower + 3;
        const i64 floor_ext = g_floor(best_at, rmask, d, offset, cost, xdrop, half);
        int ext_best = 0, len2_best = 0, diag_best = 0;
        const int t_lo = lower, t_hi = upper;
        for (int k = t_lo; k <= t_hi; ++k) {
            const int a = prev[(k + 1) & mask], b = prev[k & mask];
            int j = (a > b ? a : b) + 1;
            const int c = prev[(k - 1) & mask];
            if (c > j) j = c;
            int i = j + k;
            if (j < 0 || (i64)(i + j) < floor_ext) {
                if (k == lower) ++lower;
                else cur[k & mask] = G_INVALID;
                continue;
            }
            upper = k;
            const int n = g_slide(codes, b1, b2, step, i, j, len1, len2);
            if (n > seed_len) { seed_q = i; seed_s = j; seed_len = n; }
            i += n;
            j += n;
            cur[k & mask] = j;
            if (i + j > ext_best) { ext_best = i + j; len2_best = j; diag_best = k; }
            if (j == len2) { lower = k + 1; end2 = true; }
            if (i == len1) { upper = k - 1; end1 = true; }
        }
        const int score = ext_best * half - d * cost;
        const int last = best_at[(d - 1) & rmask];
        if (score >= last) {
            best_at[d & rmask] = score;
            best_dist = d; best_diag = diag_best; best_len2 = len2_best; cells_best = cells;
        } else {
            best_at[d & rmask] = last;
        }
        if ((WRITE && d == stop) || lower > upper) break;
        if (!end2) --lower;
        if (!end1) ++upper;
        int* t = prev; prev = cur; cur = t;
    }
    return GSide{best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2, cells_best,
                 false};
}


// The same side by one warp (greedy_gapped_*_warp): each distance's diagonals 32 at a time, lane L on
// diagonal c + L, each sliding on its own; every lane holds the side's scalars. The order-dependent
// bookkeeping of the one-thread loop is rebuilt from ballots: the best extent and the longest slide of a
// distance are the first lane's (lowest diagonal) among the largest; the range's new lower bound is the
// first live diagonal after the last one that reached the subject's end (or after the range's start);
// its upper bound the last live diagonal, less one where it reached the query's end. A dropped diagonal
// always writes the invalid offset (the one-thread loop skips it at the range's start, where no later
// read looks), so every entry a later distance or the walk reads is the one-thread loop's.
template <bool WRITE>
__device__ GSide g_side_warp(const u8* __restrict__ codes, i64 b1, i64 b2, int step, int len1, int len2, int match,
                             int mismatch, int xdrop, int* prev, int* cur, int width, int* best_at, int memory,
                             int stop, int* tb, i64 tb_base, int* row_lo, i64* row_tb, i64 row_base, int lane) {
    const unsigned FULL = 0xffffffffu;
    const int half = match / 2;
    const int cost = match + mismatch;
    const int offset = (xdrop + half) / cost + 1;
    const int mask = width - 1, rmask = memory - 1;
    const int first = g_slide(codes, b1, b2, step, 0, 0, len1, len2);
    int seed_q = 0, seed_s = 0, seed_len = first;
    if (first == len1 || first == len2 || (WRITE && stop <= 0))
        return GSide{0, first, first, 0, seed_q, seed_s, seed_len, first == len2, 0, false};
    if (lane == 0) { prev[0] = first; best_at[0] = first * match; }
    __syncwarp();
    int lower = -1, upper = 1;
    bool end1 = false, end2 = false;
    int best_dist = 0, best_diag = 0, best_len2 = first;
    i64 cells = 0, cells_best = 0;
    for (int d = 1;; ++d) {
        if (upper - lower + 5 > width)
            return GSide{best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2,
                         cells_best, true};
        if (lane == 0) {
            g_sentinels(prev, mask, lower, upper);
            if (WRITE) {
                row_lo[row_base + d - 1] = lower - 1;
                row_tb[row_base + d - 1] = tb_base + cells;
            }
        }
        __syncwarp();
        if (WRITE) {
            for (int k = lower - 1 + lane; k <= upper + 1; k += 32) tb[tb_base + cells + k - lower + 1] = prev[k & mask];
        }
        cells += upper - lower + 3;
        const i64 floor_ext = g_floor(best_at, rmask, d, offset, cost, xdrop, half);
        int ext_best = 0, len2_best = 0, diag_best = 0;
        const int t_lo = lower, t_hi = upper;
        int low = lower, up = upper;  // the range's new bounds as the one-thread loop leaves them
        for (int c = t_lo; c <= t_hi; c += 32) {
            const int k = c + lane;
            const bool active = k <= t_hi;
            int i = 0, j = 0;
            bool live = false;
            if (active) {
                const int a = prev[(k + 1) & mask], b = prev[k & mask];
                j = (a > b ? a : b) + 1;
                const int cc = prev[(k - 1) & mask];
                if (cc > j) j = cc;
                i = j + k;
                live = !(j < 0 || (i64)(i + j) < floor_ext);
            }
            int n = 0;
            const int i0 = i, j0 = j;
            if (live) {
                n = g_slide(codes, b1, b2, step, i, j, len1, len2);
                i += n;
                j += n;
            }
            if (active) cur[k & mask] = live ? j : G_INVALID;  // another ring than the one read
            const bool r2 = live && j == len2, r1 = live && i == len1;
            const unsigned lives = __ballot_sync(FULL, live);
            const unsigned reach2 = __ballot_sync(FULL, r2);
            const unsigned reach1 = __ballot_sync(FULL, r1);
            // the longest slide: the first lane's among the longest
            int most = live ? n : -1;
            for (int s = 16; s > 0; s >>= 1) { const int o = __shfl_xor_sync(FULL, most, s); if (o > most) most = o; }
            if (most > seed_len) {
                const int at = __ffs(__ballot_sync(FULL, live && n == most)) - 1;
                seed_q = __shfl_sync(FULL, i0, at);
                seed_s = __shfl_sync(FULL, j0, at);
                seed_len = most;
            }
            // the best extent: the first lane's among the largest
            int ext = live ? i + j : -1;
            for (int s = 16; s > 0; s >>= 1) { const int o = __shfl_xor_sync(FULL, ext, s); if (o > ext) ext = o; }
            if (ext > ext_best) {
                const int at = __ffs(__ballot_sync(FULL, live && i + j == ext)) - 1;
                ext_best = ext;
                len2_best = __shfl_sync(FULL, j, at);
                diag_best = c + at;
            }
            // the bounds: lower from the last subject end reached (else the range's start, where it still is)
            int from = -1;  // lane from which lower runs to the next live diagonal
            if (reach2) from = 32 - __clz(reach2);
            else if (low == c) from = 0;
            if (from >= 0) {
                const unsigned after = from < 32 ? (lives & ~reach2 & (0xffffffffu << from)) : 0u;
                low = after ? c + __ffs(after) - 1 : (t_hi < c + 31 ? t_hi : c + 31) + 1;
            }
            if (lives) {
                const int last = 31 - __clz(lives);
                up = c + last - ((reach1 >> last) & 1u);
            }
            if (reach1) end1 = true;
            if (reach2) end2 = true;
        }
        lower = low;
        upper = up;
        const int score = ext_best * half - d * cost;
        const int last = best_at[(d - 1) & rmask];
        __syncwarp();
        if (score >= last) {
            if (lane == 0) best_at[d & rmask] = score;
            best_dist = d; best_diag = diag_best; best_len2 = len2_best; cells_best = cells;
        } else if (lane == 0) {
            best_at[d & rmask] = last;
        }
        __syncwarp();
        if ((WRITE && d == stop) || lower > upper) break;
        if (!end2) --lower;
        if (!end1) ++upper;
        int* t = prev; prev = cur; cur = t;
    }
    return GSide{best_dist, best_len2 + best_diag, best_len2, best_diag, seed_q, seed_s, seed_len, end2, cells_best,
                 false};
}

// A side by one thread or by one warp.
template <bool WARP, bool WRITE>
__device__ __forceinline__ GSide g_run(const u8* __restrict__ codes, i64 b1, i64 b2, int step, int len1, int len2,
                                       int match, int mismatch, int xdrop, int* prev, int* cur, int width,
                                       int* best_at, int memory, int stop, int* tb, i64 tb_base, int* row_lo,
                                       i64* row_tb, i64 row_base, int lane) {
    if constexpr (WARP) {
        GSide s = g_side_warp<WRITE>(codes, b1, b2, step, len1, len2, match, mismatch, xdrop, prev, cur, width, best_at,
                                     memory, stop, tb, tb_base, row_lo, row_tb, row_base, lane);
        __syncwarp();
        return s;
    } else {
        return g_side<WRITE>(codes, b1, b2, step, len1, len2, match, mismatch, xdrop, prev, cur, width, best_at,
                             memory, stop, tb, tb_base, row_lo, row_tb, row_base);
    }
}

#define G_ARGS                                                                                                 \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,               \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, const int *__restrict__ q_pos,          \
        const int *__restrict__ t_pos, i64 n, int match, int mismatch, int xdrop, i64 width, i64 memory,      \
        const i64 *__restrict__ work_off, int *__restrict__ work

#define G_SCORE_OUT                                                                                          \
    int *__restrict__ out_score, int *__restrict__ out_q_start, int *__restrict__ out_q_end,                   \
        int *__restrict__ out_t_start, int *__restrict__ out_t_end, int *__restrict__ out_q_seed,              \
        int *__restrict__ out_t_seed, int *__restrict__ out_edges, int *__restrict__ out_dist,                 \
        i64 *__restrict__ out_cells

// The seeds of this thread (one a thread, grid-stride) or of this warp (WARP: lane 0 writes the results).
#define G_SEEDS(k)                                                                                            \
    const int lane = WARP ? (int)(threadIdx.x & 31) : 0;                                                      \
    const i64 g_first = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / (WARP ? 32 : 1);                       \
    const i64 g_stride = (i64)gridDim.x * blockDim.x / (WARP ? 32 : 1);                                       \
    for (i64 k = g_first; k < n; k += g_stride)

template <bool WARP>
__device__ __forceinline__ void g_score_kernel(G_ARGS, G_SCORE_OUT) {
    G_SEEDS(k) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k], w = (int)width, mem = (int)memory;
        int* prev = work + work_off[k];
        int* cur = prev + w;
        int* best_at = cur + w;
        const GSide r = g_run<WARP, false>(codes, qo + qp, to + tp, 1, q_len[k] - qp, t_len[k] - tp, match,
                                           mismatch, xdrop, prev, cur, w, best_at, mem, -1, nullptr, 0, nullptr,
                                           nullptr, 0, lane);
        const GSide l = g_run<WARP, false>(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev,
                                           cur, w, best_at, mem, -1, nullptr, 0, nullptr, nullptr, 0, lane);
        if (lane != 0) continue;
        const int half = match / 2;
        out_score[k] = (r.len1 + r.len2 + l.len1 + l.len2) * half - (r.dist + l.dist) * (match + mismatch);
        const int q_lo = qp - l.len1, t_lo = tp - l.len2, q_hi = qp + r.len1, t_hi = tp + r.len2;
        out_q_start[k] = q_lo;
        out_q_end[k] = q_hi;
        out_t_start[k] = t_lo;
        out_t_end[k] = t_hi;
        int q_r = qp + r.seed_q, t_r = tp + r.seed_s, valid_r = 0;
        if (q_r < q_hi && t_r < t_hi) {
            int v = q_hi - q_r;
            if (t_hi - t_r < v) v = t_hi - t_r;
            if (r.seed_len < v) v = r.seed_len;
            valid_r = v / 2;
        } else {
            q_r = qp; t_r = tp;
        }
        int q_l = qp - l.seed_q, t_l = tp - l.seed_s, valid_l = 0;
        if (q_l > q_lo && t_l > t_lo) {
            int v = q_l - q_lo;
            if (t_l - t_lo < v) v = t_l - t_lo;
            if (l.seed_len < v) v = l.seed_len;
            valid_l = v / 2;
        } else {
            q_l = qp; t_l = tp;
        }
        if (valid_r > valid_l) { out_q_seed[k] = q_r + valid_r; out_t_seed[k] = t_r + valid_r; }
        else { out_q_seed[k] = q_l - valid_l; out_t_seed[k] = t_l - valid_l; }
        out_edges[k] = (l.edge ? EDGE_LEFT : 0) | (r.edge ? EDGE_RIGHT : 0) | ((r.overflow || l.overflow) ? G_OVERFLOW : 0);
        out_dist[2 * k] = r.dist;
        out_dist[2 * k + 1] = l.dist;
        out_cells[2 * k] = r.cells;
        out_cells[2 * k + 1] = l.cells;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_gapped_score(G_ARGS, G_SCORE_OUT) {
    g_score_kernel<false>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                          work_off, work, out_score, out_q_start, out_q_end, out_t_start, out_t_end, out_q_seed,
                          out_t_seed, out_edges, out_dist, out_cells);
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_gapped_score_warp(G_ARGS, G_SCORE_OUT) {
    g_score_kernel<true>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                         work_off, work, out_score, out_q_start, out_q_end, out_t_start, out_t_end, out_q_seed,
                         out_t_seed, out_edges, out_dist, out_cells);
}

// A walk's operation, merged into the last one of its kind (kernels/greedy.py: _emit).
__device__ __forceinline__ void g_emit(u8* ops_t, int* ops_n, i64& pos, int dpos, int& count, int op, int n) {
    if (n == 0) return;
    if (count > 0 && ops_t[pos - dpos] == op) { ops_n[pos - dpos] += n; return; }
    ops_t[pos] = (u8)op;
    ops_n[pos] = n;
    pos += dpos;
    ++count;
}

// One side's operations from its best point back to the seed (kernels/greedy.py: _walk).
__device__ int g_walk(const int* __restrict__ tb, const int* __restrict__ row_lo, const i64* __restrict__ row_tb,
                      i64 row_base, int dist, int diag, int len2, int first, u8* ops_t, int* ops_n, i64 pos, int dpos) {
    int count = 0, j = len2;
    for (int d = dist; d > 0; --d) {
        const i64 r0 = row_tb[row_base + d - 1] - row_lo[row_base + d - 1];
        const int a = tb[r0 + diag - 1], b = tb[r0 + diag], c = tb[r0 + diag + 1];
        int nd, nj;
        if (a > (b > c ? b : c)) { nd = diag - 1; nj = a; }
        else if (b > c) { nd = diag; nj = b; }
        else { nd = diag + 1; nj = c; }
        if (nd == diag) {
            g_emit(ops_t, ops_n, pos, dpos, count, G_SUB, j - nj);
        } else if (nd < diag) {
            g_emit(ops_t, ops_n, pos, dpos, count, G_SUB, j - nj);
            g_emit(ops_t, ops_n, pos, dpos, count, G_INS, 1);
        } else {
            g_emit(ops_t, ops_n, pos, dpos, count, G_SUB, j - nj - 1);
            g_emit(ops_t, ops_n, pos, dpos, count, G_DEL, 1);
        }
        diag = nd;
        j = nj;
    }
    g_emit(ops_t, ops_n, pos, dpos, count, G_SUB, first);
    return count;
}

#define G_FILL_ARGS                                                                                          \
    const int *__restrict__ dist, const i64 *__restrict__ tb_off, int *__restrict__ tb,                         \
        const i64 *__restrict__ row_off, int *__restrict__ row_lo, i64 *__restrict__ row_tb,                    \
        const i64 *__restrict__ ops_off, u8 *__restrict__ ops_t, int *__restrict__ ops_n, int *__restrict__ out_nops

template <bool WARP>
__device__ __forceinline__ void g_fill_kernel(G_ARGS, G_FILL_ARGS) {
    G_SEEDS(k) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k], w = (int)width, mem = (int)memory;
        int* prev = work + work_off[k];
        int* cur = prev + w;
        int* best_at = cur + w;
        const GSide r = g_run<WARP, true>(codes, qo + qp, to + tp, 1, q_len[k] - qp, t_len[k] - tp, match, mismatch,
                                          xdrop, prev, cur, w, best_at, mem, dist[2 * k], tb, tb_off[2 * k], row_lo,
                                          row_tb, row_off[2 * k], lane);
        const GSide l = g_run<WARP, true>(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev,
                                          cur, w, best_at, mem, dist[2 * k + 1], tb, tb_off[2 * k + 1], row_lo, row_tb,
                                          row_off[2 * k + 1], lane);
        if (lane != 0) continue;
        const i64 base = ops_off[k], room = ops_off[k + 1] - base;
        const int first_r = g_slide(codes, qo + qp, to + tp, 1, 0, 0, q_len[k] - qp, t_len[k] - tp);
        const int first_l = g_slide(codes, qo + qp - 1, to + tp - 1, -1, 0, 0, qp, tp);
        const int nl = g_walk(tb, row_lo, row_tb, row_off[2 * k + 1], l.dist, l.diag, l.len2, first_l, ops_t, ops_n,
                              base, 1);
        int nr = g_walk(tb, row_lo, row_tb, row_off[2 * k], r.dist, r.diag, r.len2, first_r, ops_t, ops_n,
                        base + room - 1, -1);
        const i64 at = base + nl;
        i64 src = base + room - nr;
        if (nl > 0 && nr > 0 && ops_t[at - 1] == ops_t[src]) {
            ops_n[at - 1] += ops_n[src];
            ++src;
            --nr;
        }
        for (int t = 0; t < nr; ++t) {
            ops_t[at + t] = ops_t[src + t];
            ops_n[at + t] = ops_n[src + t];
        }
        out_nops[k] = nl + nr;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_gapped_fill(G_ARGS, G_FILL_ARGS) {
    g_fill_kernel<false>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                         work_off, work, dist, tb_off, tb, row_off, row_lo, row_tb, ops_off, ops_t, ops_n, out_nops);
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_gapped_fill_warp(G_ARGS, G_FILL_ARGS) {
    g_fill_kernel<true>(codes, q_off, q_len, t_off, t_len, q_pos, t_pos, n, match, mismatch, xdrop, width, memory,
                        work_off, work, dist, tb_off, tb, row_off, row_lo, row_tb, ops_off, ops_t, ops_n, out_nops);
}

// ------------------------------------------------------------------ BLAST+'s gap edits (s_ReduceGaps)
//
// One thread an alignment (kernels/greedy.py: greedy_reduce and the functions it calls, whose docstrings
// state the rules). Its edit script is t/c[a .. a + cnt), edited in place; bases compared as codes (an N
// equals an N), a position outside the seed's sequences equal to nothing.

__device__ __forceinline__ bool g_same(const u8* __restrict__ codes, i64 qo, i64 to, int ql, int tl, int a, int b) {
    return 0 <= a && a < ql && 0 <= b && b < tl && codes[qo + a] == codes[to + b];
}

__device__ int g_rebuild(u8* t, int* c, i64 a, int cnt) {
    int j = -1;
    for (int i = 0; i < cnt; ++i) {
        const int op = t[a + i], n = c[a + i];
        if (n == 0) continue;
        if (j >= 0 && op == t[a + j]) {
            c[a + j] += n;
        } else if (j == -1 || op == G_SUB || t[a + j] == G_SUB) {
            ++j;
            t[a + j] = (u8)op;
            c[a + j] = n;
        } else {
            const int diff = c[a + j] - n;
            if (diff > 0) {
                c[a + j - 1] += n;
                c[a + j] = diff;
            } else if (diff < 0) {
                c[a + j - 1] += c[a + j];
                c[a + j] = -diff;
                t[a + j] = (u8)op;
            } else {
                c[a + j - 1] += c[a + j];
                --j;
            }
        }
    }
    return j + 1;
}

// One side of g_move_gap (kernels/greedy.py: _take_side); false when that side runs out of operations.
__device__ bool g_take_side(u8* t, int* c, i64 a, int cnt, int pos, int cols, int step) {
    int k = pos, qd = cols, sd = cols;
    while (qd > 0 || sd > 0) {
        k += step;
        if (k < 0 || k >= cnt) return false;
        const int op = t[a + k], n = c[a + k];
        if (op == G_SUB) { qd -= n; sd -= n; }
        else if (op == G_INS) qd -= n;
        else sd -= n;
    }
    c[a + k] = -(qd > sd ? qd : sd);
    t[a + k] = G_SUB;
    for (int x = k - step; step < 0 ? x < pos - 1 : x > pos + 1; x -= step) c[a + x] = 0;
    c[a + pos] += cols;
    const int net = qd - sd;
    t[a + pos + step] = net > 0 ? G_DEL : G_INS;
    c[a + pos + step] = net > 0 ? net : -net;
    return true;
}

__device__ void g_move_gap(u8* t, int* c, i64 a, int cnt, int pos, int before, int after) {
    if (before > 0 && !g_take_side(t, c, a, cnt, pos, before, -1)) return;
    if (after > 0) g_take_side(t, c, a, cnt, pos, after, 1);
}

__device__ int g_reduce_one(const u8* __restrict__ codes, i64 qo, i64 to, int ql, int tl, int q_lo, int q_hi,
                            int t_lo, int t_hi, u8* t, int* c, i64 a, int cnt) {
    int q1 = q_lo, s1 = t_lo;
    for (int i = 0; i < cnt; ++i) {
        const int op = t[a + i], n = c[a + i];
        if (n == 0) continue;
        if (op == G_SUB) {
            if (n >= 12) {
                int nm1 = 1;
                if (i > 0)
                    while (q1 - nm1 >= q_lo && g_same(codes, qo, to, ql, tl, q1 - nm1, s1 - nm1)) ++nm1;
                q1 += n;
                s1 += n;
                int nm2 = 0;
                if (i < cnt - 1) {
                    while (q1 + 1 < q_hi && s1 + 1 < t_hi) {
                        const bool equal = g_same(codes, qo, to, ql, tl, q1, s1);
                        ++q1;
                        ++s1;
                        if (!equal) break;
                        ++nm2;
                    }
                }
                if (nm1 > 1 || nm2 > 0) g_move_gap(t, c, a, cnt, i, nm1 - 1, nm2);
                --q1;
                --s1;
            } else {
                q1 += n;
                s1 += n;
            }
        } else if (op == G_INS) {
            q1 += n;
        } else {
            s1 += n;
        }
    }
    cnt = g_rebuild(t, c, a, cnt);
    int qa = q_lo, sa = t_lo;
    for (int i = 0; i < cnt; ++i) {
        const int op = t[a + i];
        if (op == G_SUB) {
            qa += c[a + i];
            sa += c[a + i];
            continue;
        }
        if (i > 1 && op != t[a + i - 2] && c[a + i - 2] > 0) {
            const int total = c[a + i] + c[a + i - 1] + c[a + i - 2];
            if (total == 3) {
                c[a + i - 2] = 0;
                c[a + i - 1] = 2;
                c[a + i] = 0;
                if (op == G_INS) ++qa;
                else ++sa;
            } else if (total < 12) {
                int nm1 = 0, nm2 = 0;
                const int shift = c[a + i] < c[a + i - 2] ? c[a + i] : c[a + i - 2];
                qa -= c[a + i - 1];
                sa -= c[a + i - 1];
                int qb = qa, sb = sa;
                if (op == G_INS) sa -= shift;
                else qa -= shift;
                for (int x = 0; x < c[a + i - 1]; ++x) {
                    nm1 += g_same(codes, qo, to, ql, tl, qb, sb);
                    nm2 += g_same(codes, qo, to, ql, tl, qa, sa);
                    ++qb; ++sb; ++qa; ++sa;
                }
                for (int x = 0; x < shift; ++x) {
                    nm2 += g_same(codes, qo, to, ql, tl, qa, sa);
                    ++qa; ++sa;
                }
                if (nm2 >= nm1 - shift) {
                    c[a + i - 2] -= shift;
                    c[a + i - 1] += shift;
                    c[a + i] -= shift;
                } else {
                    qa = qb;
                    sa = sb;
                }
            }
        }
        if (op == G_INS) qa += c[a + i];
        else sa += c[a + i];
    }
    return g_rebuild(t, c, a, cnt);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
greedy_reduce(const u8* __restrict__ codes, const i64* __restrict__ q_off, const int* __restrict__ q_len,
              const i64* __restrict__ t_off, const int* __restrict__ t_len, i64 n, const int* __restrict__ q_start,
              const int* __restrict__ q_end, const int* __restrict__ t_start, const int* __restrict__ t_end,
              const i64* __restrict__ ops_off, u8* __restrict__ t, int* __restrict__ c, int* __restrict__ count) {
    GRID_STRIDE(k, n) {
        count[k] = g_reduce_one(codes, q_off[k], t_off[k], q_len[k], t_len[k], q_start[k], q_end[k], t_start[k],
                                t_end[k], t, c, ops_off[k], count[k]);
    }
}

// ------------------------------------------------------------------ BLAST+'s re-scoring of a traced-back HSP
//
// One thread an alignment (kernels/greedy.py: greedy_rescore, _rescore_one, greedy_runs state the rules).

#define G_OP_I 1
#define G_OP_D 2
#define G_OP_EQ 7
#define G_OP_X 8

// The re-scoring's state (kernels/greedy.py: _rescore_one's): the running sum and the best part so far.
struct GRescore {
    i64 total, score;
    int q, s, best_q0, best_s0, best_q1, best_s1, cur_q, cur_s, best_first, best_last, cur_first, best_last_n;
};

__device__ __forceinline__ GRescore g_rescore_start(int q, int s) {
    GRescore r;
    r.total = 0; r.score = 0;
    r.q = q; r.s = s;
    r.best_q0 = q; r.best_s0 = s; r.best_q1 = q; r.best_s1 = s; r.cur_q = q; r.cur_s = s;
    r.best_first = 0; r.best_last = 0; r.cur_first = 0; r.best_last_n = -1;
    return r;
}

// After a step of operation `index` (`kk` of its `m` columns done): a restart where the sum fell below 0
// (inside the operation: its length becomes the columns left, written to `c_at` where `write`), else a new
// best part.
__device__ __forceinline__ void g_rescore_check(GRescore& r, int index, int& kk, int& m, i64 restart_cut,
                                                int* __restrict__ c_at, bool write) {
    if (r.total < 0) {
        if (kk < m) {
            m -= kk;
            if (write) *c_at = m;
            r.cur_first = index;
            kk = 0;
        } else {
            r.cur_first = index + 1;
        }
        r.total = 0;
        r.cur_q = r.q; r.cur_s = r.s;
        if (r.score < restart_cut) {
            r.best_q0 = r.q; r.best_s0 = r.s; r.score = 0;
            r.best_first = r.cur_first; r.best_last = r.cur_first;
        }
    } else if (r.total > r.score) {
        r.score = r.total;
        r.best_q0 = r.cur_q; r.best_s0 = r.cur_s; r.best_q1 = r.q; r.best_s1 = r.s;
        r.best_first = r.cur_first; r.best_last = index; r.best_last_n = kk;
    }
}

// The best part grown by the exact matches beside it, kept or dropped by the cutoff, written for seed k.
__device__ __forceinline__ void g_rescore_end(GRescore r, const u8* __restrict__ codes, i64 qo, i64 to, int ql, int tl,
                                              i64 a, int cnt, i64 cut, int reward, int* __restrict__ c,
                                              int* __restrict__ count, i64 k, int* __restrict__ out_score,
                                              int* __restrict__ out_q_start, int* __restrict__ out_q_end,
                                              int* __restrict__ out_t_start, int* __restrict__ out_t_end,
                                              int* __restrict__ out_first) {
    i64 score = r.score / 2;
    if (r.best_first < cnt && r.best_last < cnt) {
        int ext = 0, i = r.best_q0, j = r.best_s0;
        while (i > 0 && j > 0) {
            --i; --j;
            const u8 x = codes[qo + i];
            if (!(x < 4 && x == codes[to + j])) break;
            ++ext;
        }
        r.best_q0 -= ext; r.best_s0 -= ext;
        c[a + r.best_first] += ext;
        if (r.best_last == r.best_first) r.best_last_n += ext;
        score += (i64)ext * reward;
        ext = 0; i = r.best_q1; j = r.best_s1;
        while (i < ql && j < tl) {
            const u8 x = codes[qo + i];
            if (!(x < 4 && x == codes[to + j])) break;
            ++i; ++j; ++ext;
        }
        r.best_q1 += ext; r.best_s1 += ext; r.best_last_n += ext;
        score += (i64)ext * reward;
    }
    if (score < cut) {
        count[k] = 0;
    } else {
        c[a + r.best_last] = r.best_last_n;
        count[k] = r.best_last - r.best_first + 1;
    }
    out_first[k] = r.best_first;
    out_score[k] = (int)score;
    out_q_start[k] = r.best_q0; out_q_end[k] = r.best_q1; out_t_start[k] = r.best_s0; out_t_end[k] = r.best_s1;
}

#define G_RESCORE_ARGS                                                                                         \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,                 \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, i64 n, const int *__restrict__ q_start,   \
        const int *__restrict__ t_start, const i64 *__restrict__ ops_off, u8 *__restrict__ t, int *__restrict__ c, \
        int *__restrict__ count, int reward, int penalty, int n_score, const i64 *__restrict__ cutoff,          \
        int *__restrict__ out_score, int *__restrict__ out_q_start, int *__restrict__ out_q_end,                \
        int *__restrict__ out_t_start, int *__restrict__ out_t_end, int *__restrict__ out_first

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_rescore(G_RESCORE_ARGS) {
    GRID_STRIDE(k, n) {
        const i64 qo = q_off[k], to = t_off[k], a = ops_off[k];
        const int cnt = count[k];
        const i64 cut = cutoff[k], restart_cut = (reward & 1) ? cut : 2 * cut;  // BLAST+'s scale, as the twin's
        const int gap = reward - 2 * penalty;
        GRescore r = g_rescore_start(q_start[k], t_start[k]);
        for (int index = 0; index < cnt; ++index) {
            const int op = t[a + index];
            int m = c[a + index], kk = 0;
            while (kk < m) {
                if (op == G_SUB) {
                    const u8 x = codes[qo + r.q], y = codes[to + r.s];
                    r.total += x > 3 || y > 3 ? 2 * n_score : (x == y ? 2 * reward : 2 * penalty);
                    ++r.q; ++r.s; ++kk;
                } else {
                    r.total -= (i64)gap * m;
                    if (op == G_DEL) r.s += m; else r.q += m;
                    kk += m;
                }
                g_rescore_check(r, index, kk, m, restart_cut, c + a + index, true);
            }
        }
        g_rescore_end(r, codes, qo, to, q_len[k], t_len[k], a, cnt, cut, reward, c, count, k, out_score, out_q_start,
                      out_q_end, out_t_start, out_t_end, out_first);
    }
}

// n columns of code after a run of `length` columns of `last` (kernels/greedy.py: _run).
__device__ __forceinline__ void g_run_of(u32* runs, i64& pos, i64& nruns, int& last, i64& length, int code, i64 n,
                                         int write) {
    if (code == last) { length += n; return; }
    if (length > 0) {
        if (write) runs[pos++] = (u32)((length << 4) | last);
        ++nruns;
    }
    last = code;
    length = n;
}

#define G_RUNS_ARGS                                                                                            \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const i64 *__restrict__ t_off, i64 n,          \
        const int *__restrict__ q_start, const int *__restrict__ t_start, const i64 *__restrict__ ops_off,      \
        const u8 *__restrict__ t, const int *__restrict__ c, const int *__restrict__ first,                     \
        const int *__restrict__ count, const i64 *__restrict__ run_off, u32 *__restrict__ runs,                 \
        i64 *__restrict__ stats, int write

// A seed's counts: runs, matches, mismatches, gap columns, gap opens (stats[0:5, k]).
__device__ __forceinline__ void g_runs_stats(i64* __restrict__ stats, i64 n, i64 k, i64 nruns, i64 matches,
                                             i64 mismatches, i64 gap_cols, i64 gap_opens) {
    stats[k] = nruns;
    stats[n + k] = matches;
    stats[2 * n + k] = mismatches;
    stats[3 * n + k] = gap_cols;
    stats[4 * n + k] = gap_opens;
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_runs(G_RUNS_ARGS) {
    GRID_STRIDE(k, n) {
        int qp = q_start[k], sp = t_start[k];
        const i64 qo = q_off[k], to = t_off[k], a = ops_off[k] + first[k];
        i64 pos = write ? run_off[k] : 0;
        i64 nruns = 0, matches = 0, mismatches = 0, gap_cols = 0, gap_opens = 0, length = 0;
        int last = -1;
        for (int i = 0; i < count[k]; ++i) {
            const int op = t[a + i], m = c[a + i];
            if (op == G_SUB) {
                for (int x = 0; x < m; ++x) {
                    const u8 b = codes[qo + qp];
                    if (b < 4 && b == codes[to + sp]) {
                        ++matches;
                        g_run_of(runs, pos, nruns, last, length, G_OP_EQ, 1, write);
                    } else {
                        ++mismatches;
                        g_run_of(runs, pos, nruns, last, length, G_OP_X, 1, write);
                    }
                    ++qp; ++sp;
                }
            } else {
                const int code = op == G_INS ? G_OP_I : G_OP_D;
                if (code != last) ++gap_opens;
                gap_cols += m;
                g_run_of(runs, pos, nruns, last, length, code, m, write);
                if (op == G_INS) qp += m; else sp += m;
            }
        }
        g_run_of(runs, pos, nruns, last, length, -2, 0, write);  // the last run
        g_runs_stats(stats, n, k, nruns, matches, mismatches, gap_cols, gap_opens);
    }
}

// ------------------------------------------------------------------ the same, one warp an alignment
//
// greedy_rescore_warp and greedy_runs_warp: greedy_rescore's and greedy_runs' results (their Numba twins are
// the same functions), each alignment read by one warp, its substitution runs 32 columns at a time (a
// 10-30 kb alignment one column at a time was latency-bound: 9-42 ms of a megablast search, issue 40).
// Every lane keeps the one-thread loop's state (the same values in all lanes); a chunk's columns are one a
// lane, folded into that state with ballots and a prefix sum; gap operations and a chunk where the sum falls
// below 0 (a restart: its bookkeeping writes `c`) run as the one-thread loop does, in every lane.

// The lanes' (value, first lane holding it) of the largest `v` (a butterfly: every lane gets the result).
__device__ __forceinline__ int g_warp_max(int v) {
    for (int d = 16; d > 0; d >>= 1) {
        const int o = __shfl_xor_sync(0xffffffffu, v, d);
        v = o > v ? o : v;
    }
    return v;
}

// The inclusive prefix sum of `v` over lanes 0..lane.
__device__ __forceinline__ int g_warp_scan(int v, int lane) {
    for (int d = 1; d < 32; d <<= 1) {
        const int o = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += o;
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_rescore_warp(G_RESCORE_ARGS) {
    const bool WARP = true;
    G_SEEDS(k) {
        const i64 qo = q_off[k], to = t_off[k], a = ops_off[k];
        const int cnt = count[k];
        const i64 cut = cutoff[k], restart_cut = (reward & 1) ? cut : 2 * cut;
        const int gap = reward - 2 * penalty;
        GRescore r = g_rescore_start(q_start[k], t_start[k]);
        for (int index = 0; index < cnt; ++index) {
            const int op = t[a + index];
            int m = c[a + index], kk = 0;
            if (op != G_SUB) {  // one step, as the one-thread loop
                r.total -= (i64)gap * m;
                if (op == G_DEL) r.s += m; else r.q += m;
                kk = m;
                g_rescore_check(r, index, kk, m, restart_cut, c + a + index, lane == 0);
                continue;
            }
            for (int done = m; done > 0;) {  // m columns, `done` of them left; `m` the operation's length now
                const int nv = done < 32 ? done : 32;
                int d = 0;
                if (lane < nv) {
                    const u8 x = codes[qo + r.q + lane], y = codes[to + r.s + lane];
                    d = x > 3 || y > 3 ? 2 * n_score : (x == y ? 2 * reward : 2 * penalty);
                }
                const int p = g_warp_scan(d, lane);  // the sum after lane's column, from the chunk's start
                if (__ballot_sync(0xffffffffu, lane < nv && r.total + p < 0) == 0u) {  // no restart in the chunk
                    const int top = g_warp_max(lane < nv ? p : -0x7fffffff);
                    if (r.total + top > r.score) {  // the first column reaching the chunk's best
                        const int j = __ffs(__ballot_sync(0xffffffffu, lane < nv && p == top)) - 1;
                        r.score = r.total + top;
                        r.best_q0 = r.cur_q; r.best_s0 = r.cur_s; r.best_q1 = r.q + j + 1; r.best_s1 = r.s + j + 1;
                        r.best_first = r.cur_first; r.best_last = index; r.best_last_n = kk + j + 1;
                    }
                    r.total += __shfl_sync(0xffffffffu, p, nv - 1);
                    r.q += nv; r.s += nv; kk += nv;
                } else {  // column by column, as the one-thread loop
                    for (int j = 0; j < nv; ++j) {
                        r.total += __shfl_sync(0xffffffffu, d, j);
                        ++r.q; ++r.s; ++kk;
                        g_rescore_check(r, index, kk, m, restart_cut, c + a + index, lane == 0);
                    }
                }
                done -= nv;
            }
        }
        __syncwarp();
        if (lane != 0) continue;
        g_rescore_end(r, codes, qo, to, q_len[k], t_len[k], a, cnt, cut, reward, c, count, k, out_score, out_q_start,
                      out_q_end, out_t_start, out_t_end, out_first);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK) greedy_runs_warp(G_RUNS_ARGS) {
    const bool WARP = true;
    G_SEEDS(k) {
        int qp = q_start[k], sp = t_start[k];
        const i64 qo = q_off[k], to = t_off[k], a = ops_off[k] + first[k];
        i64 pos = write ? run_off[k] : 0;
        i64 nruns = 0, matches = 0, mismatches = 0, gap_cols = 0, gap_opens = 0, length = 0;
        int last = -1;
        const unsigned below = (1u << lane) - 1u;  // the lanes before this one
        for (int i = 0; i < count[k]; ++i) {
            const int op = t[a + i], m = c[a + i];
            if (op == G_SUB) {
                for (int x = 0; x < m; x += 32) {
                    const int nv = m - x < 32 ? m - x : 32;
                    const unsigned valid = nv == 32 ? 0xffffffffu : (1u << nv) - 1u;
                    bool eq = false;
                    if (lane < nv) {
                        const u8 b = codes[qo + qp + x + lane];
                        eq = b < 4 && b == codes[to + sp + x + lane];
                    }
                    const unsigned e = __ballot_sync(0xffffffffu, eq) & valid;  // the '=' columns
                    const int ne = __popc(e);
                    matches += ne;
                    mismatches += nv - ne;
                    // a run starts at column j where its code differs from column j - 1's (the last run's before 0)
                    const bool start0 = last == G_OP_EQ ? !(e & 1u) : (last == G_OP_X ? (e & 1u) != 0 : true);
                    const unsigned starts = ((e ^ (e << 1)) & valid & ~1u) | (start0 ? 1u : 0u);
                    // each start ends the run before it, written unless empty (the first start with no run open)
                    const int low = __ffs(starts) - 1;
                    const unsigned ends = (length + low > 0) ? starts : starts & ~1u;
                    if (write && ((ends >> lane) & 1u)) {
                        const unsigned before = starts & below;
                        i64 len;
                        int code;
                        if (before == 0u) {
                            len = length + lane;
                            code = last;
                        } else {
                            len = lane - (31 - __clz(before));
                            code = (e >> (lane - 1)) & 1u ? G_OP_EQ : G_OP_X;
                        }
                        runs[pos + __popc(ends & below)] = (u32)((len << 4) | code);
                    }
                    pos += write ? __popc(ends) : 0;
                    nruns += __popc(ends);
                    if (starts != 0u) {
                        const int hb = 31 - __clz(starts);
                        length = nv - hb;
                        last = (e >> hb) & 1u ? G_OP_EQ : G_OP_X;
                    } else {
                        length += nv;
                    }
                }
                qp += m; sp += m;
            } else {
                const int code = op == G_INS ? G_OP_I : G_OP_D;
                if (code != last) ++gap_opens;
                gap_cols += m;
                if (code == last) {  // g_run_of, lane 0 writing
                    length += m;
                } else {
                    if (length > 0) {
                        if (write && lane == 0) runs[pos] = (u32)((length << 4) | last);
                        pos += write ? 1 : 0;
                        ++nruns;
                    }
                    last = code;
                    length = m;
                }
                if (op == G_INS) qp += m; else sp += m;
            }
        }
        __syncwarp();
        if (lane != 0) continue;
        g_run_of(runs, pos, nruns, last, length, -2, 0, write);  // the last run
        g_runs_stats(stats, n, k, nruns, matches, mismatches, gap_cols, gap_opens);
    }
}
