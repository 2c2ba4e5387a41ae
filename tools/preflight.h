// Before the first training step: every entry of the training list (and of the validation list when
// training validates) is checked from the files' headers, so that a missing image or a wrong size is
// found in seconds, not hours into a run when the sampler reaches it. The checks and messages are
// `segtrain data check`'s (data/dataset_check.h, preflight_check); label values are left to the
// loader (they need the decoded pixels).
//
// With on_bad_sample = fail (the default) any problem stops the run before it starts: Error(data,
// exit 3) after the problems are printed, as data check prints them ("line N: ..."). With skip
// (--skip-bad, --on-bad-sample skip) the problems are printed as a warning and the run goes on; the
// loader then skips and counts those samples as before.
#pragma once

#include <string>

#include "data/odgt.h"
#include "data/options.h"

namespace seg::cli {

struct PreflightSummary {
  int64_t entries = 0;
  int64_t bad = 0;
  double seconds = 0;
};

// `what` names the list in messages ("training list"); `check_list_size`: compare the list's
// width/height with the image (training lists). Problems go to stderr.
PreflightSummary preflight_list(const data::OdgtList& list, const char* what, bool check_list_size,
                                data::BadSamplePolicy policy, int threads);

}  // namespace seg::cli
