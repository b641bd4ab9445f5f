// The fields of LoaderOptions, each named once. forkfeedd's open_stream request (and so
// its config's defaults) and the Python package's keyword arguments read and write the
// options through this list, so a new field is a line here, not one in every parser.
#pragma once

#include "forkfeed/options.h"

namespace forkfeed {

// Who sets a field. kStream: a client of forkfeedd may ask for it. kLocal: only the
// process that runs the loader; forkfeedd decides these for the streams it serves.
enum class OptionScope { kStream, kLocal };

// Calls visit(name, field, scope) for every field of `o` (a LoaderOptions, const or not),
// in the order of its declaration.
template <typename Options, typename Visit>
void for_each_option(Options& o, Visit&& visit) {
  using enum OptionScope;
  visit("image_folder", o.image_folder, kStream);
  visit("manifest", o.manifest, kStream);
  visit("shards", o.shards, kStream);
  visit("shard_label", o.shard_label, kStream);
  visit("shard_label_field", o.shard_label_field, kStream);
  visit("fields", o.fields, kStream);
  visit("missing", o.missing, kStream);
  visit("content_check", o.content_check, kStream);
  visit("batch_size", o.batch_size, kStream);
  visit("workers", o.workers, kStream);
  visit("prefetch", o.prefetch, kStream);
  visit("weight", o.weight, kLocal);
  visit("transform", o.transform, kStream);
  visit("size", o.size, kStream);
  visit("max_size", o.max_size, kStream);
  visit("dtype", o.dtype, kStream);
  visit("layout", o.layout, kStream);
  visit("mean", o.mean, kStream);
  visit("std", o.std, kStream);
  visit("seed", o.seed, kStream);
  visit("epoch", o.epoch, kStream);
  visit("rank", o.rank, kStream);
  visit("world_size", o.world_size, kStream);
  visit("shuffle", o.shuffle, kStream);
  visit("drop_last", o.drop_last, kStream);
  visit("on_error", o.on_error, kStream);
  visit("start_method", o.start_method, kLocal);
  visit("fork_hazard", o.fork_hazard, kLocal);
  visit("max_worker_restarts", o.max_worker_restarts, kStream);
  visit("task_timeout_ms", o.task_timeout_ms, kStream);
  visit("pin_memory_device", o.pin_memory_device, kLocal);
  visit("max_pixels", o.max_pixels, kStream);
  visit("max_file_bytes", o.max_file_bytes, kStream);
  visit("log_level", o.log_level, kLocal);
}

// Stops compiling when LoaderOptions gains or loses a field: name the field in
// for_each_option() above, then count it here.
inline void every_loader_option_is_named(LoaderOptions& o) {
  [[maybe_unused]] auto& [image_folder, manifest, shards, shard_label, shard_label_field, fields, missing,
                          content_check, batch_size, workers, prefetch, weight, transform, size, max_size,
                          dtype, layout, mean, std, seed, epoch, rank, world_size, shuffle, drop_last,
                          on_error, start_method, fork_hazard, max_worker_restarts, task_timeout_ms,
                          pin_memory_device, max_pixels, max_file_bytes, log_level] = o;
}

}  // namespace forkfeed
