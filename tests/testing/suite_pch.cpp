// The one source of forkfeed_test_pch (tests/cpp_suites.cmake): CMake makes a target's
// precompiled header only beside a source of its own. The suites reuse the header, and
// nothing uses this file's object.
