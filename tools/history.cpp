#include "tools/history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fileio.h"

namespace seg::cli {

namespace {
void write_text(const std::string& path, const std::string& text) { write_file_atomic(path, text.data(), text.size()); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// One plot panel: polylines of (x, y) series scaled into a box.
struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
};

std::string panel(const std::string& title, const std::vector<Series>& series, double x_max, double top, double width,
                  double height) {
  double y_min = INFINITY, y_max = -INFINITY;
  for (const auto& s : series)
    for (const auto& p : s.points) {
      y_min = std::min(y_min, p.second);
      y_max = std::max(y_max, p.second);
    }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  if (y_max - y_min < 1e-12) y_max = y_min + 1;
  const double left = 70, plot_w = width - left - 20, plot_h = height - 40;
  std::string out;
  out += "<text x=\"" + fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", top + 14) + "\" font-size=\"13\">" + title + "</text>\n";
  out += "<rect x=\"" + fmt("%.0f", left) + "\" y=\"" + fmt("%.0f", top + 20) + "\" width=\"" + fmt("%.0f", plot_w) +
         "\" height=\"" + fmt("%.0f", plot_h) + "\" fill=\"none\" stroke=\"#999\"/>\n";
  for (int t = 0; t <= 2; ++t) {
    const double v = y_min + (y_max - y_min) * t / 2.0;
    const double y = top + 20 + plot_h * (1.0 - t / 2.0);
    out += "<text x=\"" + fmt("%.0f", left - 6) + "\" y=\"" + fmt("%.1f", y + 4) +
           "\" font-size=\"10\" text-anchor=\"end\">" + fmt("%.4g", v) + "</text>\n";
  }
  double legend_x = left + 10;
  for (const auto& s : series) {
    if (s.points.empty()) continue;
    std::string pts;
    for (const auto& p : s.points) {
      const double x = left + plot_w * (x_max > 0 ? p.first / x_max : 0);
      const double y = top + 20 + plot_h * (1.0 - (p.second - y_min) / (y_max - y_min));
      pts += fmt("%.1f", x) + "," + fmt("%.1f", y) + " ";
    }
    out += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\" points=\"" + pts + "\"/>\n";
    out += "<text x=\"" + fmt("%.0f", legend_x) + "\" y=\"" + fmt("%.0f", top + 34) + "\" font-size=\"11\" fill=\"" +
           s.color + "\">" + s.name + "</text>\n";
    legend_x += 12 + 7.0 * static_cast<double>(s.name.size());
  }
  return out;
}
}  // namespace

std::string history_svg(const History& h) {
  const double width = 760, panel_h = 190;
  double x_max = 1;
  for (const auto& r : h.rows()) x_max = std::max(x_max, static_cast<double>(r.iteration));
  for (const auto& e : h.evals()) x_max = std::max(x_max, static_cast<double>(e.iteration));
  Series loss{"training loss", "#c0392b", {}}, acc{"training pixel accuracy", "#2471a3", {}};
  Series miou{"validation mIoU", "#27ae60", {}}, vacc{"validation pixel accuracy", "#8e44ad", {}};
  Series lr_e{"lr encoder", "#d35400", {}}, lr_d{"lr decoder", "#7f8c8d", {}};
  for (const auto& r : h.rows()) {
    const double x = static_cast<double>(r.iteration);
    loss.points.emplace_back(x, r.loss);
    acc.points.emplace_back(x, r.accuracy);
    lr_e.points.emplace_back(x, r.lr_encoder);
    lr_d.points.emplace_back(x, r.lr_decoder);
  }
  for (const auto& e : h.evals()) {
    miou.points.emplace_back(static_cast<double>(e.iteration), e.mean_iou);
    vacc.points.emplace_back(static_cast<double>(e.iteration), e.pixel_accuracy);
  }
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", width) + "\" height=\"" +
                    fmt("%.0f", 3 * panel_h + 30) + "\" font-family=\"sans-serif\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += panel("loss", {loss}, x_max, 0, width, panel_h);
  svg += panel("accuracy", {acc, miou, vacc}, x_max, panel_h, width, panel_h);
  svg += panel("learning rate", {lr_e, lr_d}, x_max, 2 * panel_h, width, panel_h);
  svg += "<text x=\"380\" y=\"" + fmt("%.0f", 3 * panel_h + 20) + "\" font-size=\"12\" text-anchor=\"middle\">iteration</text>\n";
  svg += "</svg>\n";
  return svg;
}

FileDigest History::save(const std::string& dir) const {
  std::string csv =
      "iteration,epoch,loss,accuracy,lr_encoder,lr_decoder,images_per_second,data_wait_share,loss_scale,peak_memory_bytes\n";
  nlohmann::json j;
  j["train"] = nlohmann::json::array();
  for (const auto& r : rows_) {
    char line[320];
    std::snprintf(line, sizeof line, "%lld,%lld,%.6f,%.6f,%.8g,%.8g,%.3f,%.4f,%.0f,%lld\n",
                  static_cast<long long>(r.iteration), static_cast<long long>(r.epoch), r.loss, r.accuracy, r.lr_encoder,
                  r.lr_decoder, r.images_per_second, r.data_wait_share, r.loss_scale,
                  static_cast<long long>(r.peak_memory_bytes));
    csv += line;
    j["train"].push_back({{"iteration", r.iteration}, {"epoch", r.epoch}, {"loss", r.loss}, {"accuracy", r.accuracy},
                          {"lr_encoder", r.lr_encoder}, {"lr_decoder", r.lr_decoder},
                          {"images_per_second", r.images_per_second}, {"data_wait_share", r.data_wait_share},
                          {"loss_scale", r.loss_scale}, {"peak_memory_bytes", r.peak_memory_bytes}});
  }
  j["eval"] = nlohmann::json::array();
  for (const auto& e : evals_)
    j["eval"].push_back(
        {{"epoch", e.epoch}, {"iteration", e.iteration}, {"mean_iou", e.mean_iou}, {"pixel_accuracy", e.pixel_accuracy}});
  // history.json last: it is the file --resume reads, and the one the checkpoint set records.
  write_text(dir + "/history.csv", csv);
  write_text(dir + "/history.svg", history_svg(*this));
  const std::string json_text = j.dump(1) + "\n";
  write_text(dir + "/history.json", json_text);
  return digest_of(json_text.data(), json_text.size());
}

void History::load(const std::string& dir) {
  rows_.clear();
  evals_.clear();
  if (!file_exists(dir + "/history.json")) return;
  const std::vector<char> bytes = read_file(dir + "/history.json");
  const nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return;
  try {
    for (const auto& r : j.value("train", nlohmann::json::array()))
      rows_.push_back(HistoryRow{r.value("iteration", int64_t{0}), r.value("epoch", int64_t{0}), r.value("loss", 0.0),
                                 r.value("accuracy", 0.0), r.value("lr_encoder", 0.0), r.value("lr_decoder", 0.0),
                                 r.value("images_per_second", 0.0), r.value("data_wait_share", 0.0),
                                 r.value("loss_scale", 1.0), r.value("peak_memory_bytes", int64_t{0})});
    for (const auto& e : j.value("eval", nlohmann::json::array()))
      evals_.push_back(EvalRow{e.value("epoch", int64_t{0}), e.value("iteration", int64_t{0}), e.value("mean_iou", 0.0),
                               e.value("pixel_accuracy", 0.0)});
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::data, str("history.json is not a segtrain history (", e.what(), ")"))
        .file(dir + "/history.json")
        .hint("move it away to resume without the earlier log rows");
  }
}

void History::truncate(int64_t iteration) {
  rows_.erase(std::remove_if(rows_.begin(), rows_.end(), [&](const HistoryRow& r) { return r.iteration > iteration; }),
              rows_.end());
  evals_.erase(std::remove_if(evals_.begin(), evals_.end(), [&](const EvalRow& e) { return e.iteration > iteration; }),
               evals_.end());
}

}  // namespace seg::cli
