// The dataset a LoaderOptions names, opened: the one place that turns image_folder or
// manifest into a DatasetIndex, and a user's relative path into the absolute one that
// the index, the order key and forkfeedd see.
#pragma once

#include <string>

#include "forkfeed/dataset.h"
#include "forkfeed/options.h"
#include "forkfeed/status.h"

namespace forkfeed {

// |path| made absolute from this process's working directory and normalised, so the
// same dataset gives the same index (and state) from any cwd. Empty stays empty; a path
// the system cannot make absolute is kept as given.
std::string absolute_path(const std::string& path);

// The index of options' image_folder or manifest. REQUIRES: validate(options) is Ok.
Result<DatasetIndex> open_dataset(const LoaderOptions& options);

}  // namespace forkfeed
