// The x86-64 (System V) context switch behind Fiber (fiber.h), as two small assembly routines.
//
//   seg_sim_switch_context(void** save_sp, void* load_sp)
//     Pushes the callee-saved registers (rbp, rbx, r12-r15) and the SSE/x87 control words onto the
//     current stack, stores the stack pointer in *save_sp, loads load_sp and pops the same frame
//     from the other stack. The final `ret` resumes the other context where it called this function
//     (or, for a fresh fiber, in seg_sim_fiber_start). Caller-saved registers need no saving: the
//     compiler already assumes a call clobbers them.
//
//   seg_sim_fiber_start
//     The first "return address" of a fresh fiber. The frame built by seg_sim_prepare_stack leaves
//     the entry function in r12 and its argument in r13; it calls entry(arg), which never returns.
//     `.cfi_undefined rip` marks the outermost frame so unwinders and debuggers stop here.
#if defined(__x86_64__)

#include <cstdint>
#include <cstring>

extern "C" void seg_sim_switch_context(void** save_sp, void* load_sp);

asm(R"(
  .text
  .globl seg_sim_switch_context
  .hidden seg_sim_switch_context
  .type seg_sim_switch_context, @function
  .p2align 4
seg_sim_switch_context:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size seg_sim_switch_context, .-seg_sim_switch_context

  .globl seg_sim_fiber_start
  .hidden seg_sim_fiber_start
  .type seg_sim_fiber_start, @function
  .p2align 4
seg_sim_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %r13, %rdi
  callq *%r12
  ud2
  .cfi_endproc
  .size seg_sim_fiber_start, .-seg_sim_fiber_start
)");

extern "C" void seg_sim_fiber_start();

namespace seg::sim::detail {

// Builds the frame that seg_sim_switch_context pops when it first switches to a fresh fiber, and
// returns the stack pointer to store as its saved context. Layout from the returned pointer up:
//   [MXCSR | x87 control word] r15 r14 r13(arg) r12(entry) rbx rbp(0) [return: seg_sim_fiber_start]
// The pointer is 16-byte aligned, so rsp is 16-byte aligned when seg_sim_fiber_start starts and
// the `call` gives the entry function the ABI's alignment (rsp+8 aligned to 16).
void* prepare_assembly_stack(void* stack_base, size_t stack_size, void (*entry)(void*), void* arg) {
  auto top = reinterpret_cast<uintptr_t>(stack_base) + stack_size;
  top &= ~uintptr_t{15};
  auto* frame = reinterpret_cast<uint64_t*>(top - 80);  // 9 words used, 16-byte aligned start
  const uint32_t mxcsr = 0x1F80;                        // all exceptions masked, round to nearest
  const uint16_t fpucw = 0x037F;                        // x87 default control word
  std::memcpy(&frame[0], &mxcsr, sizeof mxcsr);
  std::memcpy(reinterpret_cast<char*>(&frame[0]) + 4, &fpucw, sizeof fpucw);
  frame[1] = 0;                                  // r15
  frame[2] = 0;                                  // r14
  frame[3] = reinterpret_cast<uint64_t>(arg);    // r13
  frame[4] = reinterpret_cast<uint64_t>(entry);  // r12
  frame[5] = 0;                                  // rbx
  frame[6] = 0;                                  // rbp: ends frame-pointer stack walks
  frame[7] = reinterpret_cast<uint64_t>(&seg_sim_fiber_start);
  frame[8] = 0;
  return frame;
}

}  // namespace seg::sim::detail

#endif  // __x86_64__
