#include "tools/preflight.h"

#include <cstdio>

#include "core/error.h"
#include "data/dataset_check.h"

namespace seg::cli {

PreflightSummary preflight_list(const data::OdgtList& list, const char* what, bool check_list_size,
                                data::BadSamplePolicy policy, int threads) {
  const data::PreflightReport r = data::preflight_check(list, check_list_size, threads);
  PreflightSummary s{r.entries, static_cast<int64_t>(r.problems.size()), r.seconds};
  if (r.problems.empty()) return s;
  // As `segtrain data check` prints them; the first 20, then a count (data check lists them all).
  constexpr size_t kShown = 20;
  std::fprintf(stderr, "segtrain: checked %lld entries of the %s %s before training: %zu bad\n",
               static_cast<long long>(r.entries), what, list.path.c_str(), r.problems.size());
  for (size_t i = 0; i < r.problems.size() && i < kShown; ++i)
    std::fprintf(stderr, "\nline %d: %s\n", r.problems[i].line, r.problems[i].message.c_str());
  if (r.problems.size() > kShown)
    std::fprintf(stderr, "\n... and %zu more (segtrain data check %s lists them all)\n", r.problems.size() - kShown,
                 list.path.c_str());
  if (policy == data::BadSamplePolicy::skip) {
    std::fprintf(stderr, "\nsegtrain: warning: --skip-bad: training goes on and skips these %zu entries when it meets them\n",
                 r.problems.size());
    return s;
  }
  throw Error(ErrorKind::data, str(r.problems.size(), " of ", r.entries, " entries of the ", what,
                                   " are bad (listed above); training did not start"))
      .file(list.path)
      .hint("fix or remove them (segtrain data check LIST --root DIR --num-class N checks everything, label values "
            "too), or pass --skip-bad to train without them");
}

}  // namespace seg::cli
