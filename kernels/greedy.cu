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
        prev[(lower - 1) & mask] = G_INVALID;
        prev[lower & mask] = G_INVALID;
        prev[upper & mask] = G_INVALID;
        prev[(upper + 1) & mask] = G_INVALID;
        if (WRITE) {
            row_lo[row_base + d - 1] = lower - 1;
            row_tb[row_base + d - 1] = tb_base + cells;
            for (int k = lower - 1; k <= upper + 1; ++k) tb[tb_base + cells + k - lower + 1] = prev[k & mask];
        }
        cells += upper - lower + 3;
        i64 fl = (i64)(d < offset ? 0 : best_at[(d - offset) & rmask]) + (i64)cost * d - xdrop;
        // the ceiling of fl / half (as Python's -((-fl) // half))
        i64 q = fl / half, r = fl % half;
        const i64 floor_ext = (r != 0 && ((r > 0) == (half > 0))) ? q + 1 : q;
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

#define G_ARGS                                                                                                 \
    const u8 *__restrict__ codes, const i64 *__restrict__ q_off, const int *__restrict__ q_len,               \
        const i64 *__restrict__ t_off, const int *__restrict__ t_len, const int *__restrict__ q_pos,          \
        const int *__restrict__ t_pos, i64 n, int match, int mismatch, int xdrop, i64 width, i64 memory,      \
        const i64 *__restrict__ work_off, int *__restrict__ work

extern "C" __global__ void __launch_bounds__(BLOCK)
greedy_gapped_score(G_ARGS, int* __restrict__ out_score, int* __restrict__ out_q_start, int* __restrict__ out_q_end,
                    int* __restrict__ out_t_start, int* __restrict__ out_t_end, int* __restrict__ out_q_seed,
                    int* __restrict__ out_t_seed, int* __restrict__ out_edges, int* __restrict__ out_dist,
                    i64* __restrict__ out_cells) {
    GRID_STRIDE(k, n) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k], w = (int)width, mem = (int)memory;
        int* prev = work + work_off[k];
        int* cur = prev + w;
        int* best_at = cur + w;
        const GSide r = g_side<false>(codes, qo + qp, to + tp, 1, q_len[k] - qp, t_len[k] - tp, match, mismatch,
                                      xdrop, prev, cur, w, best_at, mem, -1, nullptr, 0, nullptr, nullptr, 0);
        const GSide l = g_side<false>(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev, cur,
                                      w, best_at, mem, -1, nullptr, 0, nullptr, nullptr, 0);
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

extern "C" __global__ void __launch_bounds__(BLOCK)
greedy_gapped_fill(G_ARGS, const int* __restrict__ dist, const i64* __restrict__ tb_off, int* __restrict__ tb,
                   const i64* __restrict__ row_off, int* __restrict__ row_lo, i64* __restrict__ row_tb,
                   const i64* __restrict__ ops_off, u8* __restrict__ ops_t, int* __restrict__ ops_n,
                   int* __restrict__ out_nops) {
    GRID_STRIDE(k, n) {
        const i64 qo = q_off[k], to = t_off[k];
        const int qp = q_pos[k], tp = t_pos[k], w = (int)width, mem = (int)memory;
        int* prev = work + work_off[k];
        int* cur = prev + w;
        int* best_at = cur + w;
        const GSide r = g_side<true>(codes, qo + qp, to + tp, 1, q_len[k] - qp, t_len[k] - tp, match, mismatch, xdrop,
                                     prev, cur, w, best_at, mem, dist[2 * k], tb, tb_off[2 * k], row_lo, row_tb,
                                     row_off[2 * k]);
        const GSide l = g_side<true>(codes, qo + qp - 1, to + tp - 1, -1, qp, tp, match, mismatch, xdrop, prev, cur, w,
                                     best_at, mem, dist[2 * k + 1], tb, tb_off[2 * k + 1], row_lo, row_tb,
                                     row_off[2 * k + 1]);
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
