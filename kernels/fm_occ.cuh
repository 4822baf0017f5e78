// fm_occ.cuh: FM-index Occ on the interleaved 64-byte blocks, shared by the
// kernel families that walk the index (fmindex.cu, kmismatch.cu).
// Included by kernels/_cuda.py's loader (textual #include of local headers),
// after common.cuh (u32, i64) and with OCC_INTERVAL_32,
// OCC_INTERVAL_64 and BLOCK_WORDS defined (-D options). Layout:
// docs/index-format.md.

// Value k of a position array seen as u32 words.
__device__ __forceinline__ i64 pos_at(const u32* __restrict__ words, i64 k, i64 wide) {
    if (wide) return (i64)__ldg(words + 2 * k) | ((i64)__ldg(words + 2 * k + 1) << 32);
    return (i64)__ldg(words + k);
}

// Low bit of every 2-bit slot of word that holds base c.
__device__ __forceinline__ u32 match_base(u32 word, int c) {
    u32 x = word ^ (0x55555555u * (u32)c);
    return ~(x | (x >> 1)) & 0x55555555u;
}

__device__ __forceinline__ i64 block_count(const u32* __restrict__ blk, int c, i64 wide) {
    if (wide) return (i64)__ldg(blk + 2 * c) | ((i64)__ldg(blk + 2 * c + 1) << 32);
    return (i64)__ldg(blk + c);
}

__device__ __forceinline__ i64 dollars_before_block(const u32* __restrict__ blk, i64 b, i64 wide) {
    i64 interval = wide ? OCC_INTERVAL_64 : OCC_INTERVAL_32;
    return b * interval - (block_count(blk, 0, wide) + block_count(blk, 1, wide) +
                           block_count(blk, 2, wide) + block_count(blk, 3, wide));
}

// Occ(c, i): occurrences of base c in BWT rows [0, i), dollar rows excluded.
__device__ i64 occ_count(const u32* __restrict__ occ, const u32* __restrict__ dollar_rows, i64 wide, int c, i64 i) {
    i64 b = wide ? i / OCC_INTERVAL_64 : i / OCC_INTERVAL_32;
    int r = (int)(i - b * (wide ? OCC_INTERVAL_64 : OCC_INTERVAL_32));
    int header = wide ? 8 : 4;
    const u32* blk = occ + b * BLOCK_WORDS;
    i64 n = block_count(blk, c, wide);
    int full = r >> 4;
    for (int j = 0; j < full; ++j) n += __popc(match_base(__ldg(blk + header + j), c));
    int rem = r & 15;
    if (rem) n += __popc(match_base(__ldg(blk + header + full), c) & (0xFFFFFFFFu << (32 - 2 * rem)));
    if (c == 0) {  // dollar rows hold an A placeholder: take back those in [block start, i)
        i64 d = dollars_before_block(blk, b, wide);
        while (pos_at(dollar_rows, d, wide) < i) { --n; ++d; }
    }
    return n;
}
