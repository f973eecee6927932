//===- TomlAssert.h - TOML++ in the spec fuzzer as in the tfc we ship -----===//
//
// Force-included into the spec sources of tfc-fuzz-spec, which compile TOML++
// header-only (so that its parser is instrumented and guides the fuzzer)
// with clang, while tfc links Debian's libtomlplusplus, built with GCC 12 and
// NDEBUG. The two differ in TOML_ASSERT_ASSUME(x): TOML_ASSUME(x) there is
// a no-op (GCC 12 has no __builtin_assume), but __builtin_assume(x) under
// clang, i.e. undefined behaviour whenever x is false. TOML++ 3.3.0 has such
// preconditions that malformed input makes false -- parse_key() on "[\n" or
// "[[[" (fixed upstream in marzer/tomlplusplus#301), parse_time() on
// "1979-05-27Tx" -- and in the shipped library each ends in a located parse
// error (test/Spec/invalid/syntax-table-header-*.toml,
// syntax-datetime-without-time.toml).
//
// So the fuzz target builds the library's checks the way they are shipped:
// the sources are compiled without NDEBUG (our own assert()s are live) and
// TOML_ASSERT is a no-op, which makes TOML_ASSERT_ASSUME one too, as in the
// shipped build. TOML_UNREACHABLE stays __builtin_unreachable(), as it is
// with GCC, so reaching it is still a finding (marzer/tomlplusplus#295, see
// findNonAsciiOutsideComments in compiler/spec/SpecParser.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_FUZZ_TOMLASSERT_H
#define TFC_FUZZ_TOMLASSERT_H

#define TOML_ASSERT(expr) static_assert(true)

#endif // TFC_FUZZ_TOMLASSERT_H
