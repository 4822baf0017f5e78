// blast: the BLAST-style search's database side — scan, lookup, mini-extension (or
// the two-hit rule of discontiguous words), ungapped X-drop extension, unpacking of
// subject windows; and the query side's DUST (dust_reach).
//
// Twin: kernels/blast.py (same kernel names, same argument order; its docstring
// states the rules). Reference: tests/reference_blast.py. Constants from Python
// as -D options: BLOCK, SCAN_BUFFER, DUST_RING. A table word is lut_w contiguous bases
// (tmask == 0) or the bases a discontiguous template selects in span bases.
//
// Text: 16 bases per u32, first base in bits 31-30; the N mask has both bits of
// a base set where it is N (has_n == 0: none, the mask is not read). Contig c is
// text [contig_off[c], contig_off[c + 1]). Queries: base codes (0..3, 4 = N),
// sequence r is qcodes[qoff[r] .. qoff[r + 1]).

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE, record_of

typedef unsigned long long u64;

__device__ __forceinline__ u32 base_at(const u32* __restrict__ text, i64 g) {
    return (text[g >> 4] >> (30 - 2 * (int)(g & 15))) & 3u;
}

__device__ __forceinline__ bool is_n(const u32* __restrict__ nmask, int has_n, i64 g) {
    return has_n && ((nmask[g >> 4] >> (30 - 2 * (int)(g & 15))) & 3u) != 0u;
}

// The 2w bits of bases p .. p + w - 1 of a packed array (w <= 16).
__device__ __forceinline__ i64 bits_at(const u32* __restrict__ words, i64 n_words, i64 p, int w) {
    i64 i = p >> 4;
    u64 hi = words[i];
    u64 lo = i + 1 < n_words ? (u64)words[i + 1] : 0ull;
    u64 both = (hi << 32) | lo;
    int shift = 64 - 2 * ((int)(p & 15) + w);
    return (i64)((both >> shift) & ((1ull << (2 * w)) - 1ull));
}

// The 2 len bits of bases p .. p + len - 1 of a packed array (len <= 32), first base in the high bits.
__device__ __forceinline__ u64 span_bits(const u32* __restrict__ words, i64 n_words, i64 p, int len) {
    if (len <= 16) return (u64)bits_at(words, n_words, p, len);
    i64 i = p >> 4;
    u64 a = ((u64)words[i] << 32) | (i + 1 < n_words ? (u64)words[i + 1] : 0ull);
    u64 b = i + 2 < n_words ? (u64)words[i + 2] : 0ull;
    int o = (int)(p & 15);
    u64 x = o ? (a << (2 * o)) | (b >> (32 - 2 * o)) : a;  // bases p .. p + 31
    return x >> (64 - 2 * len);
}

// The table word at text position p: its lut_w bases (tmask == 0), or the bases of the span-base
// window that a discontiguous template selects (bit span - 1 - j of tmask: base j), in order.
__device__ __forceinline__ i64 word_at(const u32* __restrict__ text, i64 n_words, i64 p, int lut_w, int span,
                                      i64 tmask) {
    if (tmask == 0) return bits_at(text, n_words, p, lut_w);
    u64 x = span_bits(text, n_words, p, span);
    i64 code = 0;
    for (int j = 0; j < span; ++j)
        if ((tmask >> (span - 1 - j)) & 1) code = (code << 2) | (i64)((x >> (2 * (span - 1 - j))) & 3ull);
    return code;
}

// The same word of query codes (no N there: the caller checked qvalid).
__device__ __forceinline__ i64 query_word(const u8* __restrict__ qcodes, i64 q, int span, i64 tmask) {
    i64 code = 0;
    for (int j = 0; j < span; ++j)
        if ((tmask >> (span - 1 - j)) & 1) code = (code << 2) | (i64)qcodes[q + j];
    return code;
}

// Stride positions whose word holds no N and has its PV bit set. Each block
// gathers its hits in a shared buffer and flushes it with one atomicAdd on
// n_hits when it is half full (a round adds at most BLOCK hits, so it never
// overflows) and at the end; hits past capacity are counted, not stored. The
// loop runs the same number of rounds in every thread of a block.
extern "C" __global__ void __launch_bounds__(BLOCK)
scan_pv(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n, i64 n_words, i64 n_bases,
        int lut_w, int span, i64 tmask, int stride, i64 phase, const u32* __restrict__ pv, i64* __restrict__ hits,
        i64* __restrict__ n_hits, i64 capacity) {
    __shared__ i64 buf[SCAN_BUFFER];
    __shared__ int count;
    __shared__ i64 base;
    i64 n_pos = n_bases >= phase + span ? (n_bases - phase - span) / stride + 1 : 0;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    i64 step = (i64)gridDim.x * blockDim.x;
    for (i64 first = (i64)blockIdx.x * blockDim.x; first < n_pos; first += step) {
        i64 j = first + threadIdx.x;
        if (j < n_pos) {
            i64 p = phase + j * stride;
            bool ok = !(has_n && span_bits(nmask, n_words, p, span) != 0);
            if (ok) {
                i64 c = word_at(text, n_words, p, lut_w, span, tmask);
                ok = ((pv[c >> 5] >> (u32)(c & 31)) & 1u) != 0u;
            }
            if (ok) buf[atomicAdd(&count, 1)] = p;
        }
        __syncthreads();
        if (count >= SCAN_BUFFER / 2) {
            if (threadIdx.x == 0) base = (i64)atomicAdd((u64*)n_hits, (u64)count);
            __syncthreads();
            for (int k = threadIdx.x; k < count; k += blockDim.x)
                if (base + k < capacity) hits[base + k] = buf[k];
            __syncthreads();
            if (threadIdx.x == 0) count = 0;
        }
        __syncthreads();
    }
    if (count > 0) {
        if (threadIdx.x == 0) base = (i64)atomicAdd((u64*)n_hits, (u64)count);
        __syncthreads();
        for (int k = threadIdx.x; k < count; k += blockDim.x)
            if (base + k < capacity) hits[base + k] = buf[k];
    }
}

// Query positions of each hit's word (count, then fill after a prefix sum).
extern "C" __global__ void __launch_bounds__(BLOCK)
lookup_count(const i64* __restrict__ hits, i64 n, const u32* __restrict__ text, i64 n_words, int lut_w, int span,
             i64 tmask, const int* __restrict__ first, i64* __restrict__ counts) {
    GRID_STRIDE(h, n) {
        i64 c = word_at(text, n_words, hits[h], lut_w, span, tmask);
        counts[h] = (i64)(first[c + 1] - first[c]);
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
lookup_fill(const i64* __restrict__ hits, i64 n, const u32* __restrict__ text, i64 n_words, int lut_w, int span,
            i64 tmask, const int* __restrict__ first, const int* __restrict__ positions, const i64* __restrict__ out_off,
            int* __restrict__ q_pos, i64* __restrict__ s_pos) {
    GRID_STRIDE(h, n) {
        i64 s = hits[h];
        i64 c = word_at(text, n_words, s, lut_w, span, tmask);
        i64 o = out_off[h];
        for (int j = first[c]; j < first[c + 1]; ++j, ++o) {
            q_pos[o] = positions[j];
            s_pos[o] = s;
        }
    }
}

// Exact extension of each pair along its diagonal; a seed when the run is at
// least `word` long and no earlier stride position of the run starts a listed
// query word (the first finder keeps it). The left walk stops at the first
// earlier finder and only a first finder walks right, so a pair inside a long
// run (a repeat) costs a few strides; run_* are the run's where keep is 1.
extern "C" __global__ void __launch_bounds__(BLOCK)
mini_extend(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n, const i64* __restrict__ contig_off,
            i64 n_contigs, const u8* __restrict__ qcodes, const i64* __restrict__ qoff, i64 n_seq,
            const u8* __restrict__ qvalid, const int* __restrict__ q_pos, const i64* __restrict__ s_pos, i64 n,
            int lut_w, int stride, int word, u8* __restrict__ keep, i64* __restrict__ run_q, i64* __restrict__ run_s,
            int* __restrict__ run_len) {
    GRID_STRIDE(i, n) {
        i64 q = q_pos[i], s = s_pos[i];
        i64 r = record_of(qoff, n_seq, q), c = record_of(contig_off, n_contigs, s);
        i64 qa = qoff[r], qb = qoff[r + 1], ca = contig_off[c], cb = contig_off[c + 1];
        bool ok = s + lut_w <= cb;
        i64 left = 0, right = lut_w;
        u8 k = 0;
        if (ok) {
            // left, stopping at the first earlier stride position of the run that starts a listed
            // query word (its pair finds the run: this one is no seed); only a first finder walks right
            k = 1;
            int step = 0;
            while (q - left - 1 >= qa && s - left - 1 >= ca) {
                u32 b = qcodes[q - left - 1];
                i64 g = s - left - 1;
                if (b > 3u || is_n(nmask, has_n, g) || base_at(text, g) != b) break;
                ++left;
                if (++step == stride) {
                    step = 0;
                    if (qvalid[q - left]) { k = 0; break; }
                }
            }
            if (k) {
                while (q + right < qb && s + right < cb) {
                    u32 b = qcodes[q + right];
                    i64 g = s + right;
                    if (b > 3u || is_n(nmask, has_n, g) || base_at(text, g) != b) break;
                    ++right;
                }
                if (left + right < word) k = 0;
            }
        }
        keep[i] = k;
        run_q[i] = q - left;
        run_s[i] = s - left;
        run_len[i] = (int)(left + right);
    }
}

// Discontiguous word hits (dc-megablast): pair i is a seed when its span lies inside its contig
// and, with a two-hit window (window > 0), another hit lies d = span .. window bases before it on
// its diagonal, inside its query sequence and contig: a listed query word at q - d (qvalid) equal
// to the N-free text word at s - d under the template (or the second one, tmask2 != 0). BLAST+
// asks this of the last unextended hit of the diagonal; here of any, so no order is needed.
extern "C" __global__ void __launch_bounds__(BLOCK)
two_hit(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n, i64 n_words,
        const i64* __restrict__ contig_off, i64 n_contigs, const u8* __restrict__ qcodes, const i64* __restrict__ qoff,
        i64 n_seq, const u8* __restrict__ qvalid, const int* __restrict__ q_pos, const i64* __restrict__ s_pos, i64 n,
        int span, i64 tmask, i64 tmask2, int window, u8* __restrict__ keep) {
    GRID_STRIDE(i, n) {
        i64 q = q_pos[i], s = s_pos[i];
        i64 r = record_of(qoff, n_seq, q), c = record_of(contig_off, n_contigs, s);
        i64 qa = qoff[r], ca = contig_off[c];
        u8 k = s + span <= contig_off[c + 1] ? (u8)(window == 0) : (u8)0;
        if (s + span <= contig_off[c + 1]) {
            for (int d = span; d <= window && !k; ++d) {
                i64 q2 = q - d, s2 = s - d;
                if (q2 < qa || s2 < ca) break;
                if (!qvalid[q2] || (has_n && span_bits(nmask, n_words, s2, span) != 0)) continue;
                if (word_at(text, n_words, s2, 0, span, tmask) == query_word(qcodes, q2, span, tmask) ||
                    (tmask2 != 0 && word_at(text, n_words, s2, 0, span, tmask2) == query_word(qcodes, q2, span, tmask2)))
                    k = 1;
            }
        }
        keep[i] = k;
    }
}

// X-drop walk along one diagonal from (q, g) in direction dir (+1 right, -1
// left): the best gain and the number of bases reaching it.
__device__ __forceinline__ void xdrop_walk(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n,
                                           const u8* __restrict__ qcodes, i64 q, i64 g, i64 qlim, i64 glim, int dir,
                                           int reward, int penalty, int n_score, int xdrop, int& best, i64& reach) {
    int run = 0;
    best = 0;
    reach = 0;
    for (i64 j = 0;; ++j) {
        i64 qi = q + dir * j, gi = g + dir * j;
        if (dir > 0 ? (qi >= qlim || gi >= glim) : (qi < qlim || gi < glim)) break;
        u32 b = qcodes[qi];
        run += (b > 3u || is_n(nmask, has_n, gi)) ? n_score : base_at(text, gi) == b ? reward : penalty;
        if (run > best) { best = run; reach = j + 1; }
        else if (run < best - xdrop) break;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
ungapped_extend(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n,
                const i64* __restrict__ contig_off, i64 n_contigs, const u8* __restrict__ qcodes,
                const i64* __restrict__ qoff, i64 n_seq, const i64* __restrict__ run_q, const i64* __restrict__ run_s,
                const int* __restrict__ run_len, i64 n, int reward, int penalty, int n_score, int xdrop,
                int* __restrict__ score,
                i64* __restrict__ q_start, i64* __restrict__ q_end) {
    GRID_STRIDE(i, n) {
        i64 q0 = run_q[i], s0 = run_s[i];
        int length = run_len[i];
        i64 r = record_of(qoff, n_seq, q0), c = record_of(contig_off, n_contigs, s0);
        int best_r, best_l;
        i64 end, start;
        xdrop_walk(text, nmask, has_n, qcodes, q0 + length, s0 + length, qoff[r + 1], contig_off[c + 1], 1,
                   reward, penalty, n_score, xdrop, best_r, end);
        xdrop_walk(text, nmask, has_n, qcodes, q0 - 1, s0 - 1, qoff[r], contig_off[c], -1,
                   reward, penalty, n_score, xdrop, best_l, start);
        score[i] = length * reward + best_r + best_l;
        q_start[i] = q0 - start;
        q_end[i] = q0 + length + end;
    }
}

// Text ranges [start[r], start[r] + len) as base codes 0..4 at out_off[r]: one
// thread an output base.
extern "C" __global__ void __launch_bounds__(BLOCK)
unpack_ranges(const u32* __restrict__ text, const u32* __restrict__ nmask, int has_n, const i64* __restrict__ start,
              const i64* __restrict__ out_off, i64 n_ranges, u8* __restrict__ codes) {
    i64 total = out_off[n_ranges];
    GRID_STRIDE(i, total) {
        i64 r = record_of(out_off, n_ranges, i);
        while (r + 1 < n_ranges && out_off[r + 1] <= i) ++r;  // skip empty ranges
        i64 g = start[r] + (i - out_off[r]);
        codes[i] = is_n(nmask, has_n, g) ? (u8)4 : (u8)base_at(text, g);
    }
}

// Symmetric DUST's reach (gseek/blast/dust.py; the rules in the twin's dust_span): one thread a span of
// starts span_lo[i] .. span_hi[i] - 1 of an N-free record ending at rec_end[i], read from span_lo[i] to
// min(rec_end[i], span_hi[i] + window); reach[s] = e - s of the largest end e of a perfect interval [s, e),
// -1 where none. window <= DUST_RING - 1 (the rings' slots; -D DUST_RING).

__device__ __forceinline__ int dust_tri(const u8* __restrict__ codes, i64 p) {
    return codes[p] * 16 + codes[p + 1] * 4 + codes[p + 2];
}

__device__ __forceinline__ void dust_keep(i64 s, int e, i64 a, i64 lo, i64 hi, int* __restrict__ reach) {
    if (a + s >= lo && a + s < hi) reach[a + s] = e >= 0 ? (int)(e - s) : -1;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
dust_reach(const u8* __restrict__ codes, const i64* __restrict__ span_lo, const i64* __restrict__ span_hi,
           const i64* __restrict__ rec_end, i64 n_spans, i64 level, i64 window, int* __restrict__ reach) {
    GRID_STRIDE(i, n_spans) {
        const i64 lo = span_lo[i], hi = span_hi[i];
        const i64 a = lo, b = rec_end[i] < hi + window ? rec_end[i] : hi + window;
        const i64 n = b - a;
        int counts[64], slide[64];
        i64 best_r[DUST_RING], best_l[DUST_RING];
        int ends[DUST_RING];
        for (int t = 0; t < 64; ++t) { counts[t] = 0; slide[t] = 0; }
        int ring = 1;
        while (ring < window + 1) ring *= 2;
        const int slot = ring - 1;
        for (int j = 0; j < ring; ++j) { best_r[j] = 0; best_l[j] = 1; ends[j] = -1; }
        i64 whole = 0, written = 0;
        for (i64 e = 3; e <= n; ++e) {
            const i64 lowest = e - window > 0 ? e - window : 0;
            const int z = (int)((e - 3) & slot);
            best_r[z] = 0; best_l[z] = 1; ends[z] = -1;
            int t = dust_tri(codes, a + e - 3);
            whole += slide[t];
            slide[t] += 1;
            if (lowest > 0) {
                t = dust_tri(codes, a + lowest - 1);
                slide[t] -= 1;
                whole -= slide[t];
            }
            const i64 top = 10 * whole - 1;  // floor division, as the twin's (-1 // level == -1)
            const i64 longest = top >= 0 ? top / level : -((-top + level - 1) / level);
            const i64 last = lowest > e - 3 - longest ? lowest : e - 3 - longest;
            i64 r = 0, m_r = 0, m_l = 1;
            for (i64 s = e - 3; s >= last; --s) {
                t = dust_tri(codes, a + s);
                r += counts[t];
                counts[t] += 1;
                const i64 l = e - s - 3;
                const int q = (int)(s & slot);
                if (s + 4 <= e) {
                    const i64 p_r = best_r[q], p_l = best_l[q];
                    if (p_r * m_l > m_r * p_l) { m_r = p_r; m_l = p_l; }
                }
                if (l >= 1 && r * 10 > level * l) {
                    if (r * m_l >= m_r * l) {
                        if (e > ends[q]) ends[q] = (int)e;
                        m_r = r; m_l = l;
                    }
                }
                best_r[q] = m_r; best_l[q] = m_l;
            }
            for (i64 s = e - 3; s >= last; --s) counts[dust_tri(codes, a + s)] -= 1;
            if (e - window >= written) {
                dust_keep(written, ends[written & slot], a, lo, hi, reach);
                written += 1;
            }
        }
        for (i64 s = written; s < n - 2; ++s) dust_keep(s, ends[s & slot], a, lo, hi, reach);
    }
}
