// Console output for long commands: a live progress bar with ETA when stdout is a terminal, plain
// log lines otherwise (CI logs, files), and the Ctrl-C / SIGTERM flag that lets training stop at a
// step boundary and save a resumable checkpoint.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace seg::cli {

bool stdout_is_terminal();

class Progress {
 public:
  // `total` steps; `label` starts the line ("train", "eval").
  Progress(std::string label, int64_t total, bool live);
  // Redraws the bar (live) after step `done` of `total`, with `status` after it. Throttled to ~10/s.
  void update(int64_t done, const std::string& status);
  // A permanent line: clears the bar first when live, then redraws it below.
  void line(const std::string& text);
  void finish();
  double elapsed_seconds() const;
  // "1h02m", "3m05s", "12s"
  static std::string format_duration(double seconds);

 private:
  std::string label_;
  int64_t total_;
  bool live_;
  bool drawn_ = false;
  std::string last_status_;
  int64_t last_done_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// Installs SIGINT/SIGTERM handlers that set a flag (the second Ctrl-C exits immediately).
void install_stop_handlers();
bool stop_requested();
void reset_stop_request();  // tests
const char* stop_signal_name();

}  // namespace seg::cli
