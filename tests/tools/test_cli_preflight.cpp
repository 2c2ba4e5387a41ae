// Training checks every list entry's files before its first step (issue 17: a missing image was
// found only when the sampler reached it, hours into a run), with `segtrain data check`'s messages;
// --skip-bad keeps the skip-and-count behaviour.
#include <doctest/doctest.h>

#include <filesystem>
#include <sstream>

#include "core/fileio.h"
#include "data/file_io.h"
#include "data/image_codec.h"
#include "data/odgt.h"
#include "tests/tools/cli_test_helpers.h"

using namespace seg;
using seg::test::run_segtrain;

namespace {
bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// A copy of the tiny dataset with four bad entries, one per kind of problem the header check finds:
//   line 1  the image file is missing
//   line 2  the list's width disagrees with the image
//   line 3  the label has another size than its image
//   line 4  the label is an RGB PNG (colours, not class indices)
std::string broken_dataset(const std::string& name) {
  namespace fs = std::filesystem;
  const std::string dir = seg::test::fresh_dir(name);
  fs::copy(seg::test::tiny_dataset(), dir, fs::copy_options::recursive);
  data::OdgtReadOptions read;
  read.root = dir;
  read.require_size = true;
  const data::OdgtList list = data::read_odgt(dir + "/training.odgt", read);
  REQUIRE(list.size() >= 4);
  fs::remove(list[0].fpath_img);
  const data::Image img3 = data::load_image_rgb(list[2].fpath_img);
  data::save_png(list[2].fpath_segm, data::Image(img3.width + 2, img3.height, 1));
  const data::Image img4 = data::load_image_rgb(list[3].fpath_img);
  data::save_png(list[3].fpath_segm, data::Image(img4.width, img4.height, 3));
  // Line 2 gets width + 1 (paths as the list writes them: relative to the root).
  const std::vector<char> bytes = read_file(dir + "/training.odgt");
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  std::string text, line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (n == 2) {
      const std::string rel_img = list[1].fpath_img.substr(dir.size() + 1), rel_segm = list[1].fpath_segm.substr(dir.size() + 1);
      line = data::odgt_line(rel_img, rel_segm, list[1].width + 1, list[1].height);
    }
    text += line + "\n";
  }
  data::write_file_atomic(dir + "/training.odgt", text);
  return dir;
}

std::vector<std::string> train_args(const std::string& data_dir, const std::string& run_dir) {
  std::vector<std::string> a = {"train", "--cfg", seg::test::config_file(), "--threads", "2"};
  for (const auto& o : seg::test::tiny_overrides(run_dir, 1, 2)) a.push_back(o);
  a.insert(a.end(), {"DATASET.root_dataset", data_dir, "DATASET.list_train", data_dir + "/training.odgt"});
  return a;
}

// The block `segtrain data check` prints for list line n: "line n: data error: ...", up to the blank line.
std::string check_block(const std::string& check_output, int n) {
  const std::string start = "\nline " + std::to_string(n) + ": ";
  const size_t at = check_output.find(start);
  if (at == std::string::npos) return "";
  const size_t end = check_output.find("\n\n", at + 1);
  return check_output.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
}
}  // namespace

TEST_CASE("a bad list entry stops training before its first step, with data check's message (exit 3)") {
  const std::string data_dir = broken_dataset("preflight_data");
  const std::string run_dir = seg::test::fresh_dir("preflight_run");
  const auto r = run_segtrain(train_args(data_dir, run_dir));
  CAPTURE(r.output);
  CHECK(r.exit_code == 3);
  CHECK(contains(r.output, "4 of 24 entries of the training list are bad (listed above); training did not start"));
  CHECK(contains(r.output, "--skip-bad"));
  CHECK_FALSE(contains(r.output, "Epoch: ["));
  CHECK_FALSE(file_exists(run_dir + "/train_state.safetensors"));
  CHECK_FALSE(file_exists(run_dir + "/config.json"));

  // The same problems, worded the same, as `segtrain data check` reports them.
  const auto check = run_segtrain({"data", "check", data_dir + "/training.odgt", "--root", data_dir, "--num-class", "10"});
  CAPTURE(check.output);
  CHECK(check.exit_code == 3);
  const char* kinds[] = {"missing image file", "but the list says", "but its label is", "must be 8-bit single-channel"};
  for (int n = 1; n <= 4; ++n) {
    CAPTURE(n);
    const std::string block = check_block(check.output, n);
    REQUIRE_FALSE(block.empty());
    CHECK(contains(block, kinds[n - 1]));
    CHECK(contains(r.output, block));
  }
  CHECK(check_block(r.output, 5).empty());  // the good entries are not reported
}

TEST_CASE("--skip-bad: the bad entries are reported, training runs and skips them" * doctest::test_suite("slow")) {
  const std::string data_dir = broken_dataset("preflight_skip_data");
  const std::string run_dir = seg::test::fresh_dir("preflight_skip_run");
  auto args = train_args(data_dir, run_dir);
  args.push_back("--skip-bad");
  const auto r = run_segtrain(args);
  CAPTURE(r.output);
  CHECK(r.exit_code == 0);
  CHECK(contains(r.output, "checked 24 entries of the training list"));
  CHECK(contains(r.output, "--skip-bad: training goes on and skips these 4 entries"));
  CHECK(contains(r.output, "trained 2 steps"));
  CHECK(file_exists(run_dir + "/train_state.safetensors"));
}
