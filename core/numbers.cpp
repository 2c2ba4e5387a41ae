#include "core/numbers.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>

#include "core/error.h"

namespace seg {

std::optional<int64_t> parse_int64(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<double> parse_finite_double(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string format_double(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // The shortest digits that round-trip, from to_chars, laid out as Python's repr does: plain
  // decimals for exponents -4..15 (0.0001, 0.02, 123.5), scientific beyond (1e-05, 1e+16).
  char sci[64];
  const auto [end, ec] = std::to_chars(sci, sci + sizeof sci, v, std::chars_format::scientific);
  if (ec != std::errc()) return "nan";
  const std::string text(sci, end);
  const size_t e = text.find('e');
  const bool negative = text[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i)
    if (text[i] != '.') digits += text[i];
  const int exp = std::stoi(text.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0');
    } else {
      out += digits.substr(0, static_cast<size_t>(exp) + 1) + "." + digits.substr(static_cast<size_t>(exp) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_text[16];
  std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + exp_text;
}

namespace {
std::string range_text(const std::string& min, const std::string& max, bool has_min, bool has_max) {
  if (has_min && has_max) return " from " + min + " to " + max;
  if (has_min) return " >= " + min;
  if (has_max) return " <= " + max;
  return "";
}
}  // namespace

int64_t int_flag(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  const std::string expected = "an integer" + range_text(std::to_string(min), std::to_string(max), min != INT64_MIN,
                                                         max != INT64_MAX);
  const std::optional<int64_t> v = parse_int64(text);
  if (!v) throw Error(ErrorKind::usage, str(flag, ": '", text, "' is not an integer (expected ", expected, ")")).key(flag);
  if (*v < min || *v > max) throw Error(ErrorKind::usage, str(flag, ": ", *v, " is out of range (expected ", expected, ")")).key(flag);
  return *v;
}

double number_flag(const std::string& flag, const std::string& text, double min, double max) {
  const std::string expected =
      "a number" + range_text(format_double(min), format_double(max), min > -1e308, max < 1e308);
  const std::optional<double> v = parse_finite_double(text);
  if (!v) throw Error(ErrorKind::usage, str(flag, ": '", text, "' is not a number (expected ", expected, ")")).key(flag);
  if (*v < min || *v > max)
    throw Error(ErrorKind::usage, str(flag, ": ", format_double(*v), " is out of range (expected ", expected, ")")).key(flag);
  return *v;
}

}  // namespace seg
