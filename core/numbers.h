// Text <-> number for everything a user types or a file holds: command-line flags, config values,
// file metadata. One place, so that every number is parsed the same strict way (the whole text,
// base 10, no overflow, no "12abc") and every double is printed the same way (shortest text that
// reads back to the same value: 3.7 prints as "3.7", never "3.7000000000000002").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace seg {

// The whole text as a base-10 integer (leading '+' or '-' allowed, surrounding blanks not);
// nullopt when it is empty, has other characters, or does not fit.
std::optional<int64_t> parse_int64(std::string_view text);
// The whole text as a finite double ("1e-4", "0.02", "-3"); nullopt for anything else, inf and nan.
std::optional<double> parse_finite_double(std::string_view text);

// The shortest decimal text that parses back to exactly `v` (std::to_chars' digits), laid out as
// Python's repr: 0.1 -> "0.1", 1e-4 -> "0.0001", 2.0 -> "2", 1.5e-5 -> "1.5e-05", 1e16 -> "1e+16".
std::string format_double(double v);

// Command-line flags: the value of `flag`, or Error(usage, exit 2) naming the flag and the text,
// e.g. "--threads: 'abc' is not an integer (expected an integer >= 1)".
int64_t int_flag(const std::string& flag, const std::string& text, int64_t min = INT64_MIN, int64_t max = INT64_MAX);
double number_flag(const std::string& flag, const std::string& text, double min = -1e308, double max = 1e308);

}  // namespace seg
