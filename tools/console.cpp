#include "tools/console.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>

namespace seg::cli {

bool stdout_is_terminal() { return ::isatty(STDOUT_FILENO) == 1; }

Progress::Progress(std::string label, int64_t total, bool live)
    : label_(std::move(label)), total_(total), live_(live), start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string Progress::format_duration(double s) {
  char buf[32];
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

void Progress::update(int64_t done, const std::string& status) {
  last_done_ = done;
  last_status_ = status;
  if (!live_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && done < total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const int width = 24;
  const double frac = total_ > 0 ? static_cast<double>(done) / static_cast<double>(total_) : 0;
  std::string bar(static_cast<size_t>(width * frac), '#');
  bar.resize(width, '.');
  const double elapsed = elapsed_seconds();
  const std::string eta = done > 0 ? format_duration(elapsed * static_cast<double>(total_ - done) / static_cast<double>(done)) : "?";
  std::printf("\r\033[2K%s [%s] %lld/%lld eta %s %s", label_.c_str(), bar.c_str(), static_cast<long long>(done),
              static_cast<long long>(total_), eta.c_str(), status.c_str());
  std::fflush(stdout);
  drawn_ = true;
}

void Progress::line(const std::string& text) {
  if (live_ && drawn_) std::printf("\r\033[2K");
  std::printf("%s\n", text.c_str());
  if (live_ && drawn_) {
    drawn_ = false;
    update(last_done_, last_status_);
  }
  std::fflush(stdout);
}

void Progress::finish() {
  if (live_ && drawn_) std::printf("\r\033[2K");
  drawn_ = false;
  std::fflush(stdout);
}

namespace {
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal.load() != 0) std::_Exit(128 + sig);  // second signal: leave now
  g_stop_signal.store(sig);
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa{};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop_signal.load() != 0; }
void reset_stop_request() { g_stop_signal.store(0); }
const char* stop_signal_name() {
  const int s = g_stop_signal.load();
  return s == SIGINT ? "SIGINT (Ctrl-C)" : s == SIGTERM ? "SIGTERM" : "none";
}

}  // namespace seg::cli
