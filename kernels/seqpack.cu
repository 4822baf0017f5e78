// seqpack: 2-bit packing with an N mask, reverse complement, w-gram codes.
//
// Twin: kernels/seqpack.py (same kernel names, same argument order).
// Reference: tests/reference.py. Constants from Python as -D options: BLOCK.
//
// Layout: 16 bases per 32-bit word, base j of a word in bits 31-2j..30-2j
// (first base in the high bits, as NCBI NA2 and BWA pack bytes). A = 0, C = 1,
// G = 2, T = 3; an ambiguous base (code 4) packs as A and sets both of its
// bits in the N-mask word at the same position.
// Every kernel is a grid-stride loop: any grid size gives the same result.

#include "common.cuh"  // u8, u32, i64, GRID_STRIDE, record_of

#define WGRAM_INVALID 0xFFFFFFFFu

// Bases base .. base + 15 of codes as one packed word and its N mask; those at
// or past end pack as A with a clear mask.
__device__ __forceinline__ void pack16(const u8* __restrict__ codes, i64 base, i64 end, u32& word, u32& mask) {
    word = 0;
    mask = 0;
    #pragma unroll
    for (int j = 0; j < 16; ++j) {
        i64 i = base + j;
        u32 c = i < end ? codes[i] : 0u;
        int shift = 30 - 2 * j;
        if (c > 3u) mask |= 3u << shift;
        word |= (c & 3u) << shift;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
pack_2bit(const u8* __restrict__ codes, i64 n, u32* __restrict__ packed, u32* __restrict__ nmask) {
    i64 n_words = (n + 15) >> 4;
    GRID_STRIDE(w, n_words) {
        u32 word, mask;
        pack16(codes, w << 4, n, word, mask);
        packed[w] = word;
        nmask[w] = mask;
    }
}

// Records packed into word-aligned rows: record r fills words word_off[r] ..
// word_off[r + 1] - 1 from the first word's high bits; bases past its end pack
// as A with a clear N mask (one thread per output word).
extern "C" __global__ void __launch_bounds__(BLOCK)
pack_rows(const u8* __restrict__ codes, const i64* __restrict__ offsets, const i64* __restrict__ word_off,
          i64 n_records, u32* __restrict__ packed, u32* __restrict__ nmask) {
    i64 n_words = word_off[n_records];
    GRID_STRIDE(w, n_words) {
        i64 r = record_of(word_off, n_records, w);
        u32 word, mask;
        pack16(codes, offsets[r] + ((w - word_off[r]) << 4), offsets[r + 1], word, mask);
        packed[w] = word;
        nmask[w] = mask;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
unpack_2bit(const u32* __restrict__ packed, const u32* __restrict__ nmask, i64 n, u8* __restrict__ codes) {
    GRID_STRIDE(i, n) {
        int shift = 30 - 2 * (int)(i & 15);
        i64 w = i >> 4;
        u32 c = (packed[w] >> shift) & 3u;
        codes[i] = ((nmask[w] >> shift) & 3u) ? (u8)4 : (u8)c;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
reverse_complement(const u8* __restrict__ codes, const i64* __restrict__ offsets, i64 n_records,
                   u8* __restrict__ out) {
    i64 n = offsets[n_records];
    GRID_STRIDE(i, n) {
        i64 r = record_of(offsets, n_records, i);
        u8 c = codes[offsets[r] + offsets[r + 1] - 1 - i];
        out[i] = c < 4 ? (u8)(3 - c) : (u8)4;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
wgram_codes(const u8* __restrict__ codes, const i64* __restrict__ offsets, i64 n_records, int w,
            u32* __restrict__ out) {
    i64 n = offsets[n_records];
    GRID_STRIDE(i, n) {
        i64 r = record_of(offsets, n_records, i);
        u32 code = WGRAM_INVALID;
        if (i + w <= offsets[r + 1]) {
            u32 acc = 0;
            bool ok = true;
            for (int j = 0; j < w; ++j) {
                u32 c = codes[i + j];
                ok = ok && c < 4u;
                acc = (acc << 2) | (c & 3u);
            }
            if (ok) code = acc;
        }
        out[i] = code;
    }
}
