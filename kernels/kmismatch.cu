// kmismatch: backtracking piece search with a mismatch budget, Hamming
// verification of candidate placements on the 2-bit reference.
//
// Twin: kernels/kmismatch.py (same kernel names, same argument order).
// Reference: tests/reference_map.py. Design: docs/architecture.md (read
// mapping) and gseek/mapper.py. Constants from Python as -D options: BLOCK,
// MAX_DFS_DEPTH, BLOCK_WORDS, OCC_INTERVAL_32, OCC_INTERVAL_64.
//
// Packed sequences: 16 bases a u32 word, first base in bits 31-30, N mask in
// the same layout (gseek.encode.pack_2bit). Mismatches between words:
// d = (read ^ ref) | read_n | ref_n; popcount((d | d >> 1) & 0x55555555), so
// an N on either side is always a mismatch.
// Every kernel is a grid-stride loop: any grid size gives the same result.

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE

#define LOW_BITS 0x55555555u

#include "fm_occ.cuh"  // FM-index Occ, shared with fmindex.cu

// Depth-first backtracking backward search of codes[start, end) with at most
// budget mismatches: every occurring string within budget substitutions gives
// one SA interval, depth first, bases A < C < G < T. Returns the number of
// intervals; writes them from slot on when fill.
__device__ i64 dfs(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C,
                   i64 wide, const u8* __restrict__ codes, i64 start, i64 end, i64 budget, bool fill, i64 slot,
                   i64* __restrict__ out_lo, i64* __restrict__ out_hi, i64* __restrict__ out_piece, i64 piece) {
    i64 lo_s[MAX_DFS_DEPTH + 1], hi_s[MAX_DFS_DEPTH + 1];
    unsigned char mm_s[MAX_DFS_DEPTH + 1], next_s[MAX_DFS_DEPTH + 1];
    int m = (int)(end - start);
    i64 count = 0;
    lo_s[0] = 0;
    hi_s[0] = C[4];
    mm_s[0] = 0;
    next_s[0] = 0;
    int depth = 0;
    while (depth >= 0) {
        if (depth == m) {
            if (fill) {
                out_lo[slot + count] = lo_s[depth];
                out_hi[slot + count] = hi_s[depth];
                out_piece[slot + count] = piece;
            }
            ++count;
            --depth;
            continue;
        }
        int b = next_s[depth];
        if (b == 4) { --depth; continue; }
        next_s[depth] = (unsigned char)(b + 1);
        int r = codes[end - 1 - depth];
        int cost = mm_s[depth] + (b != r ? 1 : 0);
        if (cost > budget) continue;
        i64 new_lo = C[b] + occ_count(occ, dollar_rows, wide, b, lo_s[depth]);
        i64 new_hi = C[b] + occ_count(occ, dollar_rows, wide, b, hi_s[depth]);
        if (new_lo >= new_hi) continue;
        ++depth;
        lo_s[depth] = new_lo;
        hi_s[depth] = new_hi;
        mm_s[depth] = (unsigned char)cost;
        next_s[depth] = 0;
    }
    return count;
}

// The 16 text slots starting at base g (words past the end read as 0).
__device__ __forceinline__ u32 ref_word(const u32* __restrict__ words, i64 n_words, i64 g) {
    i64 q = g >> 4;
    int s = (int)(g & 15);
    u32 a = q < n_words ? __ldg(words + q) : 0u;
    if (s == 0) return a;
    u32 b = q + 1 < n_words ? __ldg(words + q + 1) : 0u;
    return (a << (2 * s)) | (b >> (32 - 2 * s));
}

// Mismatches of read bases [a, b) against the reference at g + [a, b), and
// the number of reference N among them (packed: mm | n << 32).
__device__ i64 range_mismatches(const u32* __restrict__ text, const u32* __restrict__ ref_nmask, i64 has_amb,
                                i64 n_text_words, const u32* __restrict__ read_words,
                                const u32* __restrict__ read_nmask, i64 wo, i64 g, i64 a, i64 b) {
    i64 mm = 0, nn = 0;
    for (i64 w = a >> 4; w <= (b - 1) >> 4; ++w) {
        u32 keep = 0xFFFFFFFFu;
        i64 lo = a - (w << 4);
        if (lo > 0) keep >>= 2 * lo;
        i64 hi = b - (w << 4);
        if (hi < 16) keep &= 0xFFFFFFFFu << (2 * (16 - hi));
        u32 ref = ref_word(text, n_text_words, g + (w << 4));
        u32 rn = has_amb ? ref_word(ref_nmask, n_text_words, g + (w << 4)) : 0u;
        u32 d = (read_words[wo + w] ^ ref) | read_nmask[wo + w] | rn;
        mm += __popc((d | (d >> 1)) & LOW_BITS & keep);
        nn += __popc(rn & LOW_BITS & keep);
    }
    return mm | (nn << 32);
}

// out_count[x] = number of SA intervals of piece search[x] within its budget.
extern "C" __global__ void __launch_bounds__(BLOCK)
dfs_count(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C, i64 wide,
          const u8* __restrict__ codes, const i64* __restrict__ piece_offsets, const i64* __restrict__ piece_budget,
          const i64* __restrict__ search, i64 n_search, i64* __restrict__ out_count) {
    GRID_STRIDE(x, n_search) {
        i64 p = search[x];
        out_count[x] = dfs(occ, dollar_rows, C, wide, codes, piece_offsets[p], piece_offsets[p + 1],
                           piece_budget[p], false, 0, nullptr, nullptr, nullptr, p);
    }
}

// Write the intervals of piece search[x] at slots starts[x].. (with its piece id).
extern "C" __global__ void __launch_bounds__(BLOCK)
dfs_fill(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, const i64* __restrict__ C, i64 wide,
         const u8* __restrict__ codes, const i64* __restrict__ piece_offsets, const i64* __restrict__ piece_budget,
         const i64* __restrict__ search, i64 n_search, const i64* __restrict__ starts,
         i64* __restrict__ out_lo, i64* __restrict__ out_hi, i64* __restrict__ out_piece) {
    GRID_STRIDE(x, n_search) {
        i64 p = search[x];
        dfs(occ, dollar_rows, C, wide, codes, piece_offsets[p], piece_offsets[p + 1], piece_budget[p],
            true, starts[x], out_lo, out_hi, out_piece, p);
    }
}

// Candidate j: strand read cand_sr[j] placed so that piece p starts at
// cand_pos[j] of contig cand_contig[j], p = cand_piece[j] (found in the
// reference index) or -1 - cand_piece[j] when negative (found in the flank
// text: kept only if the window holds a reference N and p is the first piece
// within its budget). out_start = window start in the contig, out_mm =
// mismatches, or -1 when rejected (outside the contig, > k, or owned by
// another finder).
extern "C" __global__ void __launch_bounds__(BLOCK)
verify(const u32* __restrict__ text, const u32* __restrict__ ref_nmask, i64 has_amb, i64 n_text_words,
       const i64* __restrict__ contig_offsets, const u32* __restrict__ read_words, const u32* __restrict__ read_nmask,
       const i64* __restrict__ sr_word_offset, const i64* __restrict__ sr_length,
       const i64* __restrict__ sr_first_piece, const u8* __restrict__ sr_approx,
       const i64* __restrict__ piece_offsets, const i64* __restrict__ piece_budget, i64 k,
       const i64* __restrict__ cand_sr, const i64* __restrict__ cand_piece, const int* __restrict__ cand_contig,
       const i64* __restrict__ cand_pos, i64 n, i64* __restrict__ out_start, int* __restrict__ out_mm) {
    GRID_STRIDE(j, n) {
        i64 sr = cand_sr[j];
        i64 p = cand_piece[j];
        bool flank = p < 0;
        if (flank) p = -1 - p;
        i64 length = sr_length[sr];
        i64 first = sr_first_piece[sr];
        i64 read_start = piece_offsets[first];
        i64 start = cand_pos[j] - (piece_offsets[p] - read_start);
        int contig = cand_contig[j];
        i64 clen = contig_offsets[contig + 1] - contig_offsets[contig];
        out_start[j] = start;
        int result = -1;
        if (start >= 0 && start + length <= clen) {
            i64 g = contig_offsets[contig] + start;
            i64 wo = sr_word_offset[sr];
            i64 total = 0, refn = 0;
            bool ok = true;
            i64 last = sr_first_piece[sr + 1];
            for (i64 q = first; q < last; ++q) {
                i64 a = piece_offsets[q] - read_start, b = piece_offsets[q + 1] - read_start;
                i64 both = range_mismatches(text, ref_nmask, has_amb, n_text_words, read_words, read_nmask,
                                            wo, g, a, b);
                i64 mm = both & 0xFFFFFFFFll;
                total += mm;
                refn += both >> 32;
                if (q < p && mm <= piece_budget[q]) ok = false;  // an earlier piece finds it
                if (flank && q == p && mm > piece_budget[q]) ok = false;  // found only as N read as a base
                if (total > k || !ok) { ok = false; break; }
            }
            if (ok) {
                if (flank) ok = refn > 0;
                else if (sr_approx[sr] && refn > 0) ok = false;  // flank candidates own windows with a reference N
            }
            if (ok) result = (int)total;
        }
        out_mm[j] = result;
    }
}
