// DatasetIndex construction: walks an ImageFolder tree in exactly the order torchvision's
// ImageFolder lists it (so sample i and its label agree with a PyTorch job on the same
// data), or parses a "path<TAB>label" manifest. Paths go straight into the packed
// storage; ImageNet's 1.28M files cost no allocation per file.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forkfeed/dataset.h"
#include "transport/unique_fd.h"

namespace forkfeed {

// Appends samples to a DatasetIndex's packed storage; the only writer of its fields.
class DatasetIndexBuilder {
 public:
  // Appends os.path.join(dir, name) with `label`, without building it separately.
  void add(std::string_view dir, std::string_view name, std::int64_t label) {
    std::string& paths = index_.paths_;
    if (!name.starts_with('/')) {  // os.path.join drops `dir` before an absolute name
      paths += dir;
      if (!dir.empty() && !dir.ends_with('/')) paths += '/';
    }
    paths += name;
    index_.offsets_.push_back(paths.size());
    index_.labels_.push_back(label);
  }
  void reserve(std::size_t samples, std::size_t path_bytes) {
    index_.paths_.reserve(path_bytes);
    index_.offsets_.reserve(samples + 1);
    index_.labels_.reserve(samples);
  }
  void set_classes(std::vector<std::string> classes) { index_.classes_ = std::move(classes); }
  std::size_t size() const { return index_.labels_.size(); }

  // Growth by doubling can leave half of ImageNet's tens of MB of paths unused; trim
  // it before the index is kept for the whole run.
  DatasetIndex finish() && {
    index_.paths_.shrink_to_fit();
    index_.offsets_.shrink_to_fit();
    index_.labels_.shrink_to_fit();
    return std::move(index_);
  }

 private:
  DatasetIndex index_;
};

namespace {

// torchvision's IMG_EXTENSIONS, matched like has_file_allowed_extension: the lower-cased
// name ends with one (so "._x.jpg" from macOS counts, as it does there).
constexpr std::array<std::string_view, 9> kImageExtensions = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                                              ".pgm", ".tif",  ".tiff", ".webp"};
constexpr std::string_view kExtensionList = ".jpg, .jpeg, .png, .ppm, .bmp, .pgm, .tif, .tiff, .webp";

bool has_image_extension(std::string_view name) {
  // ASCII lowering is enough: no non-ASCII character lowers into these extensions.
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  return std::any_of(kImageExtensions.begin(), kImageExtensions.end(), [&](std::string_view ext) {
    return name.size() >= ext.size() && std::equal(ext.begin(), ext.end(), name.end() - ext.size(),
                                                   [&](char e, char c) { return e == lower(c); });
  });
}

std::string join(std::string_view dir, std::string_view name) {
  std::string out(dir);
  if (!out.empty() && !out.ends_with('/')) out += '/';
  out += name;
  return out;
}

struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId&) const = default;
};

// An open directory stream, closed exactly once.
class DirStream {
 public:
  static Result<DirStream> open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return Status::FromErrno("cannot open directory " + path, errno);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("cannot stat directory " + path, errno);
    DIR* dir = ::fdopendir(fd.get());
    if (dir == nullptr) return Status::FromErrno("cannot read directory " + path, errno);
    fd.release();  // the DIR owns it now
    return DirStream(dir, DirId{st.st_dev, st.st_ino});
  }

  DirId id() const { return id_; }

  // Calls on_entry(name, is_dir) for every entry but "." and "..". is_dir follows
  // symlinks like os.DirEntry.is_dir(): a broken link counts as a file, as in os.walk.
  template <typename OnEntry>
  Status for_each(const std::string& path, OnEntry&& on_entry) {
    const int dfd = ::dirfd(dir_.get());
    for (;;) {
      errno = 0;
      const dirent* e = ::readdir(dir_.get());
      if (e == nullptr) {
        if (errno != 0) return Status::FromErrno("cannot read directory " + path, errno);
        return Status::Ok();
      }
      const std::string_view name(e->d_name);
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {  // only these need a stat
        struct stat st {};
        is_dir = ::fstatat(dfd, e->d_name, &st, 0) == 0 && S_ISDIR(st.st_mode);
      }
      on_entry(name, is_dir);
    }
  }

 private:
  struct Closer {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  DirStream(DIR* dir, DirId id) : dir_(dir), id_(id) {}
  std::unique_ptr<DIR, Closer> dir_;
  DirId id_;
};

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
      for (std::size_t i = d.first; i < d.last; ++i) builder.add(d.path, view(refs_[i]), label);
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

// Reads a whole file straight into one string (a 1.28M-line manifest is ~60 MB).
Result<std::string> read_manifest(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return Status::FromErrno("cannot open manifest " + path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("cannot stat manifest " + path, errno);
  // st_size is only a hint (a pipe says 0); one spare byte lets the read that sees EOF
  // happen without growing.
  std::string text(static_cast<std::size_t>(std::max<off_t>(st.st_size, 0)) + 1, '\0');
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) text.resize(text.size() * 2);
    const ssize_t n = ::read(fd.get(), text.data() + used, text.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("cannot read manifest " + path, errno);
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  text.resize(used);
  return text;
}

// A manifest line quoted for an error: tabs made visible (the usual mistake is spaces
// where the tab should be) and cut short, in case a binary file was passed by mistake.
std::string quote(std::string_view line) {
  constexpr std::size_t kMaxShown = 100;
  std::string q = "'";
  for (char c : line.substr(0, kMaxShown)) {
    if (c == '\t') {
      q += "\\t";
    } else {
      q += c;
    }
  }
  q += line.size() > kMaxShown ? "...'" : "'";
  return q;
}

// A decimal label, spaces around it allowed; nullopt when it is not a non-negative int64.
std::optional<std::int64_t> parse_label(std::string_view text) {
  const std::size_t first = text.find_first_not_of(' ');
  if (first == std::string_view::npos) return std::nullopt;
  text = text.substr(first, text.find_last_not_of(' ') - first + 1);
  std::int64_t label = -1;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, label);
  if (ec != std::errc() || ptr != end || label < 0) return std::nullopt;
  return label;
}

}  // namespace

Result<DatasetIndex> DatasetIndex::from_image_folder(const std::string& root) {
  constexpr std::string_view kLayout = "an ImageFolder root holds one subdirectory per class";
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return Status::NotFound("ImageFolder root not found: " + root + "; " + std::string(kLayout));
    }
    return Status::FromErrno("cannot access ImageFolder root " + root, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::NotFound("ImageFolder root is not a directory: " + root + "; " + std::string(kLayout) +
                            " (to list files explicitly, use a manifest)");
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
  if (classes.empty()) return Status::NotFound("no class folders in " + root + "; " + std::string(kLayout));
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
    return Status::NotFound("no images found under " + root + " (looked for " + std::string(kExtensionList) +
                            " in " + std::to_string(classes.size()) + " class folders)");
  }
  builder.set_classes(std::move(classes));
  return std::move(builder).finish();
}

Result<DatasetIndex> DatasetIndex::from_manifest(const std::string& manifest) {
  Result<std::string> read = read_manifest(manifest);
  if (!read.ok()) return read.status();
  std::string_view text = read.value();
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // BOM from Windows editors

  // Relative paths are relative to the manifest's folder ("" when it is in the cwd).
  std::string_view folder = manifest;
  const std::size_t slash = folder.rfind('/');
  folder = slash == std::string_view::npos ? std::string_view() : folder.substr(0, slash == 0 ? 1 : slash);

  DatasetIndexBuilder builder;
  const std::size_t max_lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  builder.reserve(max_lines, text.size() + max_lines * (folder.size() + 1));

  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos || line.starts_with('#')) continue;

    auto bad = [&](std::string what) {
      return Status::BadData(manifest + ":" + std::to_string(line_no) + ": " + what);
    };
    // The last tab separates the label, so a path may itself contain tabs.
    const std::size_t tab = line.rfind('\t');
    if (tab == std::string_view::npos || tab == 0)
      return bad("expected 'path<TAB>label', got " + quote(line));
    const std::optional<std::int64_t> label = parse_label(line.substr(tab + 1));
    if (!label) {
      return bad("label must be a non-negative integer, got " + quote(line.substr(tab + 1)) + " in " +
                 quote(line));
    }
    builder.add(folder, line.substr(0, tab), *label);
  }
  if (builder.size() == 0) {
    return Status::BadData(manifest +
                           ": no samples; expected one 'path<TAB>label' per line "
                           "(blank lines and lines starting with '#' are skipped)");
  }
  return std::move(builder).finish();
}

}  // namespace forkfeed
