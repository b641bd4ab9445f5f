// A well-formed dataset identity for tests of what carries one (states, the open_stream
// reply): every digest made of one hex digit.
#pragma once

#include <cstdint>
#include <string>

#include "dataset/dataset_identity.h"

namespace forkfeed::testing {

inline DatasetIdentity fake_identity(std::uint64_t samples, char digit) {
  DatasetIdentity id;
  id.samples = samples;
  id.names = id.labels = id.sizes = id.legacy = std::string(kDigestDigits, digit);
  id.range_samples = identity_range_samples(samples);
  id.ranges = std::string(id.ranges_for_samples() * kRangeDigits, digit);
  id.content_check = "windows";
  id.content = std::string(kDigestDigits, digit);
  id.content_ranges = id.ranges;
  return id;
}

}  // namespace forkfeed::testing
