// Which SIMD instruction set the CPU kernels use, chosen once at run time.
//
// The whole project is compiled for x86-64-v3 (AVX2, FMA, F16C). Kernels that have an AVX-512 body
// mark that function SEG_TARGET_AVX512 (a per-function target attribute, so no AVX-512 instruction
// can leak into code that runs on an AVX2-only CPU) and branch on cpu_isa().
// SEG_CPU_ISA=scalar|avx2|avx512 lowers the choice for the whole process: it then behaves as on a
// CPU without the higher ISA (set_cpu_isa cannot raise it again, and the tests that need it report
// themselves skipped), so one AVX-512 machine can run the AVX2 build of everything too.
#pragma once

namespace seg {

enum class CpuIsa { scalar = 0, avx2 = 1, avx512 = 2 };

CpuIsa cpu_isa();              // the active ISA (starts at cpu_isa_available())
CpuIsa cpu_isa_detected();     // what the CPU supports
CpuIsa cpu_isa_available();    // what this process may use: detected, capped by SEG_CPU_ISA
void set_cpu_isa(CpuIsa isa);  // capped to cpu_isa_available(); for tests and benchmarks
const char* cpu_isa_name(CpuIsa isa);

}  // namespace seg

#if defined(__x86_64__)
#define SEG_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#else
#define SEG_TARGET_AVX512
#endif
