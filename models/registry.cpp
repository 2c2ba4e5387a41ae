#include "models/registry.h"

#include <algorithm>
#include <cctype>

#include "models/decoders.h"
#include "models/hrnet.h"
#include "models/init.h"
#include "models/mobilenet.h"
#include "models/resnet.h"

namespace seg {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_arch(const std::string& kind, const std::string& key, const std::string& arch,
                               const std::vector<std::string>& known) {
  std::string list, best;
  size_t best_d = SIZE_MAX;
  for (const auto& k : known) {
    list += (list.empty() ? "" : ", ") + k;
    const size_t d = edit_distance(arch, k);
    if (d < best_d) best_d = d, best = k;
  }
  throw Error(ErrorKind::usage, str("unknown ", kind, " architecture '", arch, "' (known: ", list, ")"))
      .key(key)
      .hint("did you mean '" + best + "'?");
}

}  // namespace

const std::vector<std::string>& encoder_archs() {
  static const std::vector<std::string> names{"mobilenetv2dilated", "resnet18",  "resnet18dilated",  "resnet50",
                                              "resnet50dilated",    "resnet101", "resnet101dilated", "hrnetv2"};
  return names;
}

const std::vector<std::string>& decoder_archs() {
  static const std::vector<std::string> names{"c1", "c1_deepsup", "ppm", "ppm_deepsup", "upernet", "upernet_lite"};
  return names;
}

double default_bn_momentum(const std::string& encoder_arch) { return lower(encoder_arch) == "hrnetv2" ? 0.1 : 0.001; }

bool has_deep_supervision(const std::string& decoder_arch) {
  const std::string a = lower(decoder_arch);
  return a.size() >= 7 && a.compare(a.size() - 7, 7, "deepsup") == 0;
}

std::shared_ptr<Encoder> build_encoder(const std::string& arch_in, int64_t /*fc_dim*/, const BuildOptions& opt) {
  const std::string arch = lower(arch_in);
  const double m = opt.bn_momentum.value_or(default_bn_momentum(arch));
  std::shared_ptr<Encoder> enc;
  if (arch == "mobilenetv2dilated") enc = std::make_shared<MobileNetV2DilatedEncoder>(m);
  else if (arch == "resnet18") enc = std::make_shared<ResNetEncoder>(18, false, m);
  else if (arch == "resnet18dilated") enc = std::make_shared<ResNetEncoder>(18, true, m);
  else if (arch == "resnet50") enc = std::make_shared<ResNetEncoder>(50, false, m);
  else if (arch == "resnet50dilated") enc = std::make_shared<ResNetEncoder>(50, true, m);
  else if (arch == "resnet101") enc = std::make_shared<ResNetEncoder>(101, false, m);
  else if (arch == "resnet101dilated") enc = std::make_shared<ResNetEncoder>(101, true, m);
  else if (arch == "hrnetv2") enc = std::make_shared<HRNetV2Encoder>(m);
  else if (arch == "resnet34" || arch == "resnet34dilated")
    throw Error(ErrorKind::usage, "encoder '" + arch + "' is not implemented (upstream raises NotImplementedError too)")
        .key("MODEL.arch_encoder");
  else
    unknown_arch("encoder", "MODEL.arch_encoder", arch, encoder_archs());
  if (opt.initialize) model_init::he_encoder(*enc, opt.seed);
  return enc;
}

std::shared_ptr<Decoder> build_decoder(const std::string& arch_in, int64_t fc_dim, int64_t num_class,
                                       const BuildOptions& opt) {
  const std::string arch = lower(arch_in);
  SEG_CHECK(fc_dim >= 4 && fc_dim % 4 == 0, usage, "MODEL.fc_dim ", fc_dim, " must be a positive multiple of 4");
  SEG_CHECK(num_class >= 1, usage, "DATASET.num_class ", num_class, " must be positive");
  const double m = opt.bn_momentum.value_or(0.001);
  std::shared_ptr<Decoder> dec;
  if (arch == "c1") dec = std::make_shared<C1Decoder>(fc_dim, num_class, false, m);
  else if (arch == "c1_deepsup") dec = std::make_shared<C1Decoder>(fc_dim, num_class, true, m);
  else if (arch == "ppm") dec = std::make_shared<PPMDecoder>(fc_dim, num_class, false, m);
  else if (arch == "ppm_deepsup") dec = std::make_shared<PPMDecoder>(fc_dim, num_class, true, m);
  else if (arch == "upernet") dec = std::make_shared<UPerNetDecoder>(fc_dim, num_class, 512, m);
  else if (arch == "upernet_lite") dec = std::make_shared<UPerNetDecoder>(fc_dim, num_class, 256, m);
  else
    unknown_arch("decoder", "MODEL.arch_decoder", arch, decoder_archs());
  if (opt.initialize) model_init::upstream_decoder(*dec, opt.seed);
  return dec;
}

std::shared_ptr<SegmentationModule> build_segmentation_module(const ModelConfig& cfg, bool initialize) {
  // With MODEL.bn_momentum unset every BatchNorm gets upstream's value: the encoder's per-arch
  // default, and 0.001 in every decoder (HRNet's C1 decoder included).
  const BuildOptions opt{cfg.bn_momentum, cfg.seed, initialize};
  auto enc = build_encoder(cfg.arch_encoder, cfg.fc_dim, opt);
  auto dec = build_decoder(cfg.arch_decoder, cfg.fc_dim, cfg.num_class, opt);
  return std::make_shared<SegmentationModule>(enc, dec, cfg.deep_sup_scale);
}

}  // namespace seg
