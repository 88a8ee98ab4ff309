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

// Declared, not defined: -fsyntax-only needs only the overload sets.
#define WEFT_FLOAT1(f) float f(float); half f(half);
#define WEFT_FLOAT2(f) float f(float, float); half f(half, half);
WEFT_FLOAT1(exp)
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

}  // namespace metal
