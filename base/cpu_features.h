// What the CPU this process runs on offers, for the kernels that pick a vector path at run
// time (and keep a plain one for the rest): asked once, the answer kept.
#pragma once

namespace forkfeed {

#if defined(__x86_64__) && defined(__GNUC__)
inline bool cpu_has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
// AVX-512 VBMI's byte permutes, with the AVX-512 BW loads and masks they come with.
inline bool cpu_has_avx512_vbmi() {
  static const bool vbmi = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
  return vbmi;
}
#else
inline bool cpu_has_avx2() { return false; }
inline bool cpu_has_avx512_vbmi() { return false; }
#endif

}  // namespace forkfeed
