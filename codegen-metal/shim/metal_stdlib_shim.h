// metal_stdlib_shim.h — just enough of <metal_stdlib> for a host C++17 compiler to parse
// the Metal Shading Language weft emits (`g++ -std=c++17 -fsyntax-only`, see
// weft_codegen_metal::syntax_check, which puts this file on the include path as
// <metal_stdlib>).
//
// What passing the check proves: the source is well-formed C++ (MSL is C++14 with
// extensions); every name it uses is declared; every type lines up as modelled here —
// pointer casts for vector copies, vector types and their sizes and alignments, the
// overloads of the math functions for float, half, int and uint (a call that would be
// ambiguous or mistyped in Metal is so here), conversions, array declarations, barriers.
//
// What it does not prove: Metal's own semantic rules — address spaces are erased here
// (device/threadgroup/constant/thread expand to nothing, so a pointer into the wrong
// address space goes unnoticed), attributes ([[buffer(n)]], [[thread_position_in_...]])
// are ignored rather than checked, kernel-signature rules and buffer-index uniqueness are
// not checked; `half` is the host's _Float16, not Metal's half (promotion rules, fast-math
// and precision differ); MSL-version features and Metal's limits are out of scope. Only a
// Metal compiler (xcrun metal, on Apple hardware) checks those.

#pragma once

// Address spaces and function qualifiers carry no meaning for the host compiler.
#define kernel
#define device
#define constant
#define threadgroup
#define thread

#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")

typedef unsigned int uint;
typedef unsigned short ushort;
// MSL's 16-bit float; GCC >= 12 and Clang >= 15 provide _Float16 on x86-64 and arm64.
typedef _Float16 half;

// Vector types: MSL aligns an n-component vector of T to n * sizeof(T) (n = 2, 4).
#define WEFT_VEC2(T, name) struct alignas(2 * sizeof(T)) name { T x, y; };
#define WEFT_VEC4(T, name) struct alignas(4 * sizeof(T)) name { T x, y, z, w; };
WEFT_VEC2(float, float2)
WEFT_VEC4(float, float4)
WEFT_VEC2(half, half2)
WEFT_VEC4(half, half4)
WEFT_VEC2(int, int2)
WEFT_VEC4(int, int4)
WEFT_VEC2(uint, uint2)
WEFT_VEC4(uint, uint4)
WEFT_VEC2(char, char2)
WEFT_VEC4(char, char4)
struct uint3 { uint x, y, z; };

namespace metal {

enum class mem_flags { mem_none = 0, mem_device = 1, mem_threadgroup = 2, mem_texture = 4 };
void threadgroup_barrier(mem_flags flags);
// SIMD-group functions (MSL 2.0+): the value a thread of the SIMD-group holds.
template <typename T> T simd_shuffle_xor(T data, ushort mask);

// Declared, not defined: -fsyntax-only needs only the overload sets.
#define WEFT_FLOAT1(f) float f(float); half f(half);
#define WEFT_FLOAT2(f) float f(float, float); half f(half, half);
WEFT_FLOAT1(exp)
WEFT_FLOAT1(exp2)
WEFT_FLOAT1(log)
WEFT_FLOAT1(sqrt)
WEFT_FLOAT1(rsqrt)
WEFT_FLOAT1(tanh)
WEFT_FLOAT1(sin)
WEFT_FLOAT1(cos)
WEFT_FLOAT1(fabs)
WEFT_FLOAT1(floor)
WEFT_FLOAT1(ceil)
WEFT_FLOAT2(pow)
WEFT_FLOAT2(fmin)
WEFT_FLOAT2(fmax)
WEFT_FLOAT2(fmod)
float fma(float, float, float);
half fma(half, half, half);
int abs(int);
int min(int, int);
uint min(uint, uint);
int max(int, int);
uint max(uint, uint);

// <metal_simdgroup_matrix> (MSL 2.3+): 8x8 matrices of a simdgroup. The element types of
// the operands of simdgroup_multiply_accumulate are independent (half inputs, float
// accumulator), as in Metal's header; shapes must chain (m x k times k x n).
typedef unsigned long ulong;
struct ulong2 { ulong x, y; ulong2(ulong a = 0, ulong b = 0) : x(a), y(b) {} };
template <typename T, int Cols, int Rows> struct simdgroup_matrix { T storage[2]; };
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
template <typename T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(const T value);
template <typename T, int Cols, int Rows>
void simdgroup_load(thread simdgroup_matrix<T, Cols, Rows>& d, const T* src,
                    ulong elements_per_row = Cols, ulong2 matrix_origin = ulong2(0, 0),
                    bool transpose_matrix = false);
template <typename T, int Cols, int Rows>
void simdgroup_store(thread simdgroup_matrix<T, Cols, Rows> a, T* dst,
                     ulong elements_per_row = Cols, ulong2 matrix_origin = ulong2(0, 0),
                     bool transpose_matrix = false);
template <typename T, typename U, typename V, typename W, int M, int N, int K>
void simdgroup_multiply_accumulate(thread simdgroup_matrix<T, N, M>& d,
                                   thread const simdgroup_matrix<U, K, M>& a,
                                   thread const simdgroup_matrix<V, N, K>& b,
                                   thread const simdgroup_matrix<W, N, M>& c);

}  // namespace metal
