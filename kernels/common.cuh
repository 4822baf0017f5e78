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

#endif  // GSEEK_COMMON_CUH
