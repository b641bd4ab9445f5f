// small_options(): the LoaderOptions most suites start from — a small ImageFolder read
// at 16 px, quietly — so that a suite states only what its test is about; and
// open_loader(), which opens one or fails the test saying why.
#pragma once

#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include <memory>

#include "forkfeed/loader.h"
#include "forkfeed/options.h"

namespace forkfeed::testing {

// Options for the ImageFolder at `root`: `workers` workers, `batch_size` samples a batch,
// 16 x 16 px, log level error; everything else LoaderOptions' defaults.
inline LoaderOptions small_options(const std::string& root, std::uint32_t workers = 2,
                                   std::uint32_t batch_size = 4) {
  LoaderOptions o;
  o.image_folder = root;
  o.workers = workers;
  o.batch_size = batch_size;
  o.size = 16;
  o.log_level = "error";
  return o;
}

// A Loader opened with `o`, or nullptr after a test failure naming why it did not open.
inline std::unique_ptr<Loader> open_loader(const LoaderOptions& o) {
  auto loader = Loader::open(o);
  EXPECT_TRUE(loader.ok()) << "Loader::open: " << loader.status().message();
  return loader.ok() ? std::move(loader).value() : nullptr;
}

}  // namespace forkfeed::testing
