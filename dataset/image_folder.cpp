// DatasetIndex::from_image_folder: walks an ImageFolder tree in exactly the order
// torchvision's ImageFolder lists it, so sample i and its label agree with a PyTorch job
// on the same data.
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/dir_stream.h"
#include "base/printable.h"
#include "dataset/dataset_index_builder.h"
#include "dataset/file_marks.h"
#include "dataset/image_extensions.h"
#include "forkfeed/dataset.h"

namespace forkfeed {
namespace {

std::string join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && !out.ends_with('/')) out += '/';
  out += name;
  return out;
}

// The image files of one class folder, in make_dataset's order:
//   for root, _, fnames in sorted(os.walk(class_dir, followlinks=True)):
//       for fname in sorted(fnames): ...
// Directories come in sorted order of their full path, which is not depth-first order:
// "cls/a-b" sorts before "cls/a/x" because '-' < '/'. Buffers are reused across classes.
class ClassWalk {
 public:
  Status run(const std::string& class_dir) {
    ancestors_.clear();
    dirs_.clear();
    names_.clear();
    refs_.clear();
    return walk(class_dir);
  }

  void emit(DatasetIndexBuilder& builder, std::int64_t label) {
    std::sort(dirs_.begin(), dirs_.end(), [](const Dir& a, const Dir& b) { return a.path < b.path; });
    auto view = [this](const NameRef& r) { return std::string_view(names_).substr(r.begin, r.size); };
    for (const Dir& d : dirs_) {
      // std::string_view compares bytes as unsigned char: Python's order for UTF-8 names.
      std::sort(refs_.begin() + d.first, refs_.begin() + d.last,
                [&](const NameRef& a, const NameRef& b) { return view(a) < view(b); });
      for (std::size_t i = d.first; i < d.last; ++i)
        builder.add(d.path, view(refs_[i]), label, DatasetIndex::kUnknownBytes);
    }
  }

 private:
  struct Dir {
    std::string path;
    std::size_t first, last;  // its image names are refs_[first, last)
  };
  struct NameRef {
    std::size_t begin, size;  // in names_
  };

  Status walk(const std::string& path) {
    std::vector<std::string> subdirs;
    DirId id{};
    {  // closed before descending: open fds grow with depth, not with width
      // os.walk skips a directory it cannot read; we fail instead, naming it, because
      // skipping would silently train on part of a class.
      Result<DirStream> dir = DirStream::open(path);
      if (!dir.ok()) return dir.status();
      id = dir->id();
      // os.walk(followlinks=True) would descend a symlink loop until the kernel refuses
      // the path, listing the same files dozens of times; we stop at the first repeat
      // of a directory on the current branch. A directory reached twice without a cycle
      // (two links to it) is still listed twice, as torchvision does.
      if (std::find(ancestors_.begin(), ancestors_.end(), id) != ancestors_.end()) return Status::Ok();
      const std::size_t self = dirs_.size();
      dirs_.push_back(Dir{path, refs_.size(), 0});
      Status st = dir->for_each(path, [&](std::string_view name, bool is_dir) {
        if (is_dir) {
          subdirs.push_back(join(path, name));
        } else if (has_image_extension(name)) {
          refs_.push_back(NameRef{names_.size(), name.size()});
          names_ += name;
        }
      });
      if (!st.ok()) return st;
      dirs_[self].last = refs_.size();
    }
    ancestors_.push_back(id);
    for (const std::string& sub : subdirs) {
      if (Status st = walk(sub); !st.ok()) return st;
    }
    ancestors_.pop_back();
    return Status::Ok();
  }

  std::vector<DirId> ancestors_;
  std::vector<Dir> dirs_;
  std::string names_;  // image file names of the current class, back to back
  std::vector<NameRef> refs_;
};

}  // namespace

Result<DatasetIndex> DatasetIndex::from_image_folder(const std::string& root, ContentCheck check,
                                                     const std::string& cache_dir) {
  constexpr std::string_view kLayout = "an ImageFolder root holds one subdirectory per class";
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return Status::NotFound("ImageFolder root not found: " + printable(root) + "; " + std::string(kLayout));
    }
    return Status::FromErrno("cannot access ImageFolder root " + printable(root), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::NotFound("ImageFolder root is not a directory: " + printable(root) + "; " +
                            std::string(kLayout) + " (to list files explicitly, use a manifest)");
  }

  // find_classes: the root's entries whose is_dir() is true, sorted. Hidden folders
  // count too (torchvision makes ".ipynb_checkpoints" a class, so labels must agree).
  std::vector<std::string> classes;
  {
    Result<DirStream> dir = DirStream::open(root);
    if (!dir.ok()) return dir.status();
    Status listed = dir->for_each(root, [&](std::string_view name, bool is_dir) {
      if (is_dir) classes.emplace_back(name);
    });
    if (!listed.ok()) return listed;
  }
  if (classes.empty())
    return Status::NotFound("no class folders in " + printable(root) + "; " + std::string(kLayout));
  std::sort(classes.begin(), classes.end());  // bytes as unsigned: Python's str order for UTF-8

  DatasetIndexBuilder builder;
  ClassWalk walk;
  for (std::size_t label = 0; label < classes.size(); ++label) {
    // torchvision raises FileNotFoundError for a class folder without images; we accept
    // it and it keeps its label, since labels are class positions and must still match
    // a model trained on the full dataset.
    if (Status s = walk.run(join(root, classes[label])); !s.ok()) return s;
    walk.emit(builder, static_cast<std::int64_t>(label));
  }
  if (builder.size() == 0) {
    return Status::NotFound("no images found under " + printable(root) + " (looked for " +
                            std::string(kImageExtensionList) + " in " + std::to_string(classes.size()) +
                            " class folders)");
  }
  // Each file's size and content, for the identity.
  const CacheFolder folder(cache_dir, "the files' content cache");
  const ContentCache cache(folder, root, check);
  mark_files(builder, check, cache_dir.empty() ? nullptr : &cache);
  builder.set_classes(std::move(classes));
  builder.set_root(root);
  return std::move(builder).finish();
}

}  // namespace forkfeed
