// fmindex: FM-index Occ, backward search, locate.
//
// Twin: kernels/fmindex.py (same kernel names, same argument order).
// Reference: tests/reference.py. Layouts: docs/index-format.md.
// Constants from Python as -D options: BLOCK, BLOCK_WORDS, OCC_INTERVAL_32,
// OCC_INTERVAL_64, MARK_ROWS_32, MARK_ROWS_64.
//
// occ: 64-byte blocks of 16 u32 words. 32-bit positions: 4 counts (A, C, G,
// T in rows before the block, dollar rows excluded) + 12 words = 192 BWT
// bases. 64-bit positions (wide = 1): 4 counts as (low, high) word pairs + 8
// words = 128 bases. Bases are 2-bit, first base in the high bits; a dollar
// row holds an A placeholder, taken back through dollar_rows (sorted dollar
// rows, then the sentinel n). The LF of a dollar row is its rank there.
// sa_mark: 64-byte blocks: rank of the block (1 word, or 2 when wide), then
// 480 (448) row bits, row j of a word in bit j. A marked row's SA value is in
// sa_samples at its rank. Position arrays (dollar_rows, sa_samples, wgram)
// arrive as u32 words: one per value, or a (low, high) pair when wide.
// Every kernel is a grid-stride loop: any grid size gives the same result.

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE, record_of

#include "fm_occ.cuh"

// LF(i): the row of the suffix one text position before row i's suffix.
__device__ i64 lf(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
                  i64 wide, i64 i) {
    i64 b = wide ? i / OCC_INTERVAL_64 : i / OCC_INTERVAL_32;
    int r = (int)(i - b * (wide ? OCC_INTERVAL_64 : OCC_INTERVAL_32));
    int header = wide ? 8 : 4;
    const u32* blk = occ + b * BLOCK_WORDS;
    int c = (int)((__ldg(blk + header + (r >> 4)) >> (30 - 2 * (r & 15))) & 3u);
    if (c == 0) {
        i64 d = dollars_before_block(blk, b, wide);
        while (pos_at(dollar_rows, d, wide) < i) ++d;
        if (pos_at(dollar_rows, d, wide) == i) return d;  // a dollar row maps to its rank among dollar rows
    }
    return C[c] + occ_count(occ, dollar_rows, wide, c, i);
}

// SA[i]: walk LF until a marked row, then its sample plus the steps walked.
__device__ i64 sa_value(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
                        const u32* __restrict__ sa_mark, const u32* __restrict__ sa_samples, i64 wide, i64 i) {
    int header = wide ? 2 : 1;
    i64 steps = 0;
    while (true) {
        i64 b = wide ? i / MARK_ROWS_64 : i / MARK_ROWS_32;
        int r = (int)(i - b * (wide ? MARK_ROWS_64 : MARK_ROWS_32));
        const u32* blk = sa_mark + b * BLOCK_WORDS;
        u32 word = __ldg(blk + header + (r >> 5));
        int bit = r & 31;
        if ((word >> bit) & 1u) {
            i64 rank = (i64)__ldg(blk);
            if (wide) rank |= (i64)__ldg(blk + 1) << 32;
            for (int j = 0; j < (r >> 5); ++j) rank += __popc(__ldg(blk + header + j));
            rank += __popc(word & ((1u << bit) - 1u));
            return pos_at(sa_samples, rank, wide) + steps;
        }
        i = lf(occ, dollar_rows, C, wide, i);
        ++steps;
    }
}

// out[4k + c] = Occ(c, rows[k]) for c = A, C, G, T.
extern "C" __global__ void __launch_bounds__(BLOCK)
occ_at(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, i64 wide,
       const i64* __restrict__ rows, i64 n_rows, i64* __restrict__ out) {
    GRID_STRIDE(k, n_rows) {
        i64 i = rows[k];
        for (int c = 0; c < 4; ++c) out[4 * k + c] = occ_count(occ, dollar_rows, wide, c, i);
    }
}

// SA interval [lo, hi) of every pattern; [0, 0) when it does not occur, is
// empty or holds an N. Starts from the w-gram table when w > 0 and the
// pattern has at least w bases.
extern "C" __global__ void __launch_bounds__(BLOCK)
backward_search(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
                const u32* __restrict__ wgram, i64 w, i64 wide, const u8* __restrict__ codes,
                const i64* __restrict__ offsets, i64 n_patterns, i64* __restrict__ lo_out, i64* __restrict__ hi_out) {
    GRID_STRIDE(p, n_patterns) {
        i64 start = offsets[p], end = offsets[p + 1];
        i64 lo = 0, hi = 0;
        bool ok = end > start;
        for (i64 j = start; j < end; ++j) ok = ok && codes[j] <= 3;
        if (ok) {
            i64 j;
            if (w > 0 && end - start >= w) {
                i64 code = 0;
                for (i64 k = end - w; k < end; ++k) code = code * 4 + codes[k];
                lo = pos_at(wgram, 2 * code, wide);
                hi = pos_at(wgram, 2 * code + 1, wide);
                j = end - w - 1;
            } else {
                int c = codes[end - 1];
                lo = C[c];
                hi = C[c + 1];
                j = end - 2;
            }
            for (; j >= start && lo < hi; --j) {
                int c = codes[j];
                lo = C[c] + occ_count(occ, dollar_rows, wide, c, lo);
                hi = C[c] + occ_count(occ, dollar_rows, wide, c, hi);
            }
        }
        if (lo >= hi) lo = hi = 0;
        lo_out[p] = lo;
        hi_out[p] = hi;
    }
}

// One backward-search step for every interval and every base: out[c * n + x]
// is the interval of base c followed by the string of interval x ([0, 0)
// when empty). From [0, text length) this enumerates all w-mers.
extern "C" __global__ void __launch_bounds__(BLOCK)
extend_intervals(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
                 i64 wide, const i64* __restrict__ lo, const i64* __restrict__ hi, i64 n,
                 i64* __restrict__ out_lo, i64* __restrict__ out_hi) {
    GRID_STRIDE(x, n) {
        i64 a = lo[x], b = hi[x];
        for (int c = 0; c < 4; ++c) {
            i64 new_lo = 0, new_hi = 0;
            if (a < b) {
                new_lo = C[c] + occ_count(occ, dollar_rows, wide, c, a);
                new_hi = C[c] + occ_count(occ, dollar_rows, wide, c, b);
            }
            if (new_lo >= new_hi) new_lo = new_hi = 0;
            out_lo[c * n + x] = new_lo;
            out_hi[c * n + x] = new_hi;
        }
    }
}

// out[k] = SA[rows[k]], a text position (separators included).
extern "C" __global__ void __launch_bounds__(BLOCK)
sa_at(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
      const u32* __restrict__ sa_mark, const u32* __restrict__ sa_samples, i64 wide,
      const i64* __restrict__ rows, i64 n_rows, i64* __restrict__ out) {
    GRID_STRIDE(k, n_rows) {
        out[k] = sa_value(occ, dollar_rows, C, sa_mark, sa_samples, wide, rows[k]);
    }
}

// Occurrence j (0 <= j < total): the pattern p with starts[p] <= j <
// starts[p + 1] and the text position of row lo[p] + j - starts[p].
extern "C" __global__ void __launch_bounds__(BLOCK)
locate_fill(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
            const u32* __restrict__ sa_mark, const u32* __restrict__ sa_samples, i64 wide,
            const i64* __restrict__ lo, const i64* __restrict__ starts, i64 n_patterns, i64 total,
            i64* __restrict__ out_pattern, i64* __restrict__ out_text_pos) {
    GRID_STRIDE(j, total) {
        i64 p = record_of(starts, n_patterns, j);
        i64 row = lo[p] + j - starts[p];
        out_pattern[j] = p;
        out_text_pos[j] = sa_value(occ, dollar_rows, C, sa_mark, sa_samples, wide, row);
    }
}

// Text position -> (contig, 0-based position in the contig) through the
// segment table (seg_text_start has a sentinel entry at n_segments).
extern "C" __global__ void __launch_bounds__(BLOCK)
text_to_contig(const i64* __restrict__ seg_text_start, const i64* __restrict__ seg_ref_start,
               const int* __restrict__ seg_contig, i64 n_segments, const i64* __restrict__ contig_offsets,
               const i64* __restrict__ text_pos, i64 n, int* __restrict__ out_contig, i64* __restrict__ out_pos) {
    GRID_STRIDE(j, n) {
        i64 t = text_pos[j];
        i64 k = record_of(seg_text_start, n_segments, t);
        int contig = seg_contig[k];
        out_contig[j] = contig;
        out_pos[j] = seg_ref_start[k] + (t - seg_text_start[k]) - contig_offsets[contig];
    }
}
