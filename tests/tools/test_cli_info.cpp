// segtrain info: the build summary and the models of upstream's configs with their parameter counts.
#include <doctest/doctest.h>

#include <string>

#include "models/registry.h"
#include "tests/tools/cli_test_helpers.h"
#include "tools/model_setup.h"

using seg::test::run_segtrain;

TEST_CASE("segtrain info lists upstream's seven models with the registry's parameter counts") {
  const auto r = run_segtrain({"info"});
  CAPTURE(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("CUDA backend") != std::string::npos);
  CHECK(seg::cli::upstream_model_pairs().size() == 7);
  for (const auto& [enc, dec] : seg::cli::upstream_model_pairs()) {
    seg::ModelConfig mc;
    mc.arch_encoder = enc;
    mc.arch_decoder = dec;
    mc.fc_dim = seg::cli::fc_dim_for(enc);
    const int64_t total = seg::build_segmentation_module(mc, false)->num_parameters();
    CAPTURE(enc + "-" + dec);
    // One line per pair that ends with its total.
    const size_t at = r.output.find("  " + enc + "-" + dec + " ");
    REQUIRE(at != std::string::npos);
    const std::string line = r.output.substr(at, r.output.find('\n', at) - at);
    CHECK(line.size() > std::to_string(total).size());
    CHECK(line.substr(line.size() - std::to_string(total).size()) == std::to_string(total));
  }
}
