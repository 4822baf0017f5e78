// common.cuh: the prelude every kernel family shares (kernels/<family>.cu).
// Included by kernels/_cuda.py's loader (textual #include of local headers), so
// every byte of a family is in the text CuPy hashes for its cache.
#ifndef GSEEK_COMMON_CUH
#define GSEEK_COMMON_CUH

typedef unsigned char u8;
typedef unsigned int u32;
typedef long long i64;

// A grid-stride loop over 0 <= i < n: any grid size gives the same result.
#define GRID_STRIDE(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (i64)gridDim.x * blockDim.x)

// The record holding position i: the largest r < n_records with offsets[r] <= i
// (offsets has n_records + 1 entries, offsets[0] <= i < offsets[n_records]).
__device__ __forceinline__ i64 record_of(const i64* __restrict__ offsets, i64 n_records, i64 i) {
    i64 lo = 0, hi = n_records;  // offsets[lo] <= i < offsets[hi]
    while (hi - lo > 1) {
        i64 mid = (lo + hi) >> 1;
        if (offsets[mid] <= i) lo = mid; else hi = mid;
    }
    return lo;
}

#endif  // GSEEK_COMMON_CUH
