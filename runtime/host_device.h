// ZBPP_HD marks a function both the host and CUDA kernels call (one formula, one layout for both).
#pragma once

#if defined(__CUDACC__)
#define ZBPP_HD __host__ __device__
#else
#define ZBPP_HD
#endif
