// The reference tree of the FS model test through the mount (fs_mount_model_test.cc): what
// the file system must hold after each operation, the errno Linux's VFS and the file system
// must return for each operation on it, and what a file's content may be after a kill -9.
//
// Nodes are the test's own ids (1 is the root), not the file system's inode numbers: the test
// checks that every name of one node shows one st_ino and different nodes different ones.
//
// Durability (per regular file): `durable` is the content as of the file's last fsync (or clean
// remount); `since` the writes after it (clipped by later truncates); `sizes` every size the
// file had since then. A truncate is a commit point of the size (the core commits it in the
// setattr's transaction), so it restarts `sizes` and cuts `durable` and `since` to the new
// size. After a kill -9 a byte at offset o may be durable[o] (zero past durable's size), or what
// any write in `since` put at o (holes punched, ranges zeroed and allocated are writes of
// zeros); the size must be one of `sizes`. A file fsynced since its last change must therefore
// read exactly as it was.
//
// Thread safety: none (one test thread).
#pragma once

#include <cerrno>
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace folio::fuse::test {

struct RefNode {
  char type = 'f';  // 'f' regular, 'd' directory, 'l' symlink
  std::string data, durable;
  std::vector<std::pair<uint64_t, std::string>> since;  // (offset, bytes) written since fsync
  std::set<uint64_t> sizes;
  std::string target;  // symlinks
  uint32_t mode = 0644;
  std::map<std::string, std::string> xattrs;
  std::map<std::string, uint64_t> kids;  // directories: name -> node
  uint32_t nlink = 1;
  uint64_t parent = 1;  // directories
  std::string name;     // directories: their one name
  int open = 0;         // open file descriptions
};

class RefTree {
 public:
  std::map<uint64_t, RefNode> nodes;

  RefTree() {
    RefNode& root = nodes[1];
    root.type = 'd';
    root.nlink = 2;
  }
  RefNode& at(uint64_t id) { return nodes.at(id); }
  uint64_t Lookup(uint64_t dir, const std::string& name) const {
    const auto& kids = nodes.at(dir).kids;
    auto it = kids.find(name);
    return it == kids.end() ? 0 : it->second;
  }
  // Links a new node as dir/name and returns its id.
  uint64_t Add(uint64_t dir, const std::string& name, RefNode n) {
    const uint64_t id = next_++;
    if (n.type == 'd') {
      n.parent = dir;
      n.name = name;
      n.nlink = 2;
      nodes[dir].nlink++;
    }
    if (n.type == 'f') n.sizes = {0};
    nodes[id] = std::move(n);
    nodes[dir].kids[name] = id;
    return id;
  }
  // a is d or above it.
  bool IsAncestor(uint64_t a, uint64_t d) const {
    for (uint64_t cur = d;; cur = nodes.at(cur).parent) {
      if (cur == a) return true;
      if (cur == 1) return false;
    }
  }
  // The child of ancestor a on the way down to d (a strictly above d).
  uint64_t ChildOnPath(uint64_t a, uint64_t d) const {
    uint64_t cur = d;
    while (nodes.at(cur).parent != a) cur = nodes.at(cur).parent;
    return cur;
  }
  // One name of id gone (its entry already erased from the parent).
  void DropLink(uint64_t id) {
    RefNode& n = nodes.at(id);
    if (n.type == 'd') {
      nodes.at(n.parent).nlink--;
      nodes.erase(id);
      return;
    }
    if (--n.nlink == 0 && n.open == 0) nodes.erase(id);
  }
  // The errno renameat2(d1/n1 -> d2/n2, flags) returns once both parents resolved, in the
  // order of do_renameat2 and vfs_rename.
  int RenameErrno(uint64_t d1, const std::string& n1, uint64_t d2, const std::string& n2,
                  unsigned flags) const;
  void ApplyRename(uint64_t d1, const std::string& n1, uint64_t d2, const std::string& n2,
                   unsigned flags);

  void Write(uint64_t id, uint64_t pos, const std::string& piece) {
    RefNode& n = nodes.at(id);
    if (n.data.size() < pos + piece.size()) n.data.resize(pos + piece.size(), '\0');
    n.data.replace(pos, piece.size(), piece);
    n.since.emplace_back(pos, piece);
    n.sizes.insert(n.data.size());
  }
  void Truncate(uint64_t id, uint64_t size) {
    RefNode& n = nodes.at(id);
    n.data.resize(size, '\0');
    n.durable.resize(size, '\0');
    for (auto& [pos, bytes] : n.since) {
      bytes.resize(pos >= size ? 0 : std::min<uint64_t>(bytes.size(), size - pos));
    }
    n.sizes = {size};
  }
  // Everything the file holds now is durable (fsync, clean remount, or read after a crash).
  static void MakeDurable(RefNode& n) {
    n.durable = n.data;
    n.since.clear();
    n.sizes = {n.data.size()};
  }
  // After a kill -9: empty when `got` is content the file may hold, else what is wrong.
  // kernel_cached: the crashed mount had writeback_cache (the size is only bounded).
  static std::string CrashContentProblem(const RefNode& n, const std::string& got,
                                         bool kernel_cached);

 private:
  uint64_t next_ = 2;
};

inline int RefTree::RenameErrno(uint64_t d1, const std::string& n1, uint64_t d2,
                                const std::string& n2, unsigned flags) const {
  constexpr unsigned kNoReplace = 1, kExchange = 2;  // RENAME_NOREPLACE, RENAME_EXCHANGE
  const uint64_t src = Lookup(d1, n1), dst = Lookup(d2, n2);
  if (src == 0) return ENOENT;
  if ((flags & kNoReplace) && dst != 0) return EEXIST;
  if ((flags & kExchange) && dst == 0) return ENOENT;
  // lock_rename's trap: the child of the higher parent on the way to the lower one.
  uint64_t trap = 0;
  if (d1 != d2 && IsAncestor(d1, d2)) trap = ChildOnPath(d1, d2);
  if (d1 != d2 && IsAncestor(d2, d1)) trap = ChildOnPath(d2, d1);
  if (trap != 0 && src == trap) return EINVAL;
  if (trap != 0 && dst == trap) return (flags & kExchange) ? EINVAL : ENOTEMPTY;
  if (src == dst) return 0;
  if ((flags & kExchange) || dst == 0) return 0;
  const bool src_dir = nodes.at(src).type == 'd', dst_dir = nodes.at(dst).type == 'd';
  if (src_dir && !dst_dir) return ENOTDIR;
  if (!src_dir && dst_dir) return EISDIR;
  if (dst_dir && !nodes.at(dst).kids.empty()) return ENOTEMPTY;
  return 0;
}

inline void RefTree::ApplyRename(uint64_t d1, const std::string& n1, uint64_t d2,
                                 const std::string& n2, unsigned flags) {
  const uint64_t src = Lookup(d1, n1), dst = Lookup(d2, n2);
  if (src == dst) return;
  auto move_dir = [&](uint64_t id, uint64_t from, uint64_t to, const std::string& name) {
    RefNode& n = nodes.at(id);
    if (n.type != 'd') return;
    n.name = name;
    n.parent = to;
    nodes.at(from).nlink--;
    nodes.at(to).nlink++;
  };
  if (flags & 2) {  // RENAME_EXCHANGE
    nodes.at(d1).kids[n1] = dst;
    nodes.at(d2).kids[n2] = src;
    move_dir(src, d1, d2, n2);
    move_dir(dst, d2, d1, n1);
    return;
  }
  nodes.at(d1).kids.erase(n1);
  if (dst != 0) DropLink(dst);
  nodes.at(d2).kids[n2] = src;
  move_dir(src, d1, d2, n2);
}

inline std::string RefTree::CrashContentProblem(const RefNode& n, const std::string& got,
                                               bool kernel_cached) {
  const bool size_ok = kernel_cached ? got.size() >= *n.sizes.begin() && got.size() <= *n.sizes.rbegin()
                                     : n.sizes.count(got.size()) != 0;
  if (!size_ok) {
    std::string held;
    for (uint64_t s : n.sizes) held += " " + std::to_string(s);
    return "size " + std::to_string(got.size()) + " is none the file had since its last fsync:" +
           held;
  }
  for (uint64_t o = 0; o < got.size(); ++o) {
    const char c = got[o];
    // The value at the last fsync (zero past that size: a hole or a truncate) or the latest.
    if ((o < n.durable.size() ? n.durable[o] : '\0') == c || (o < n.data.size() && n.data[o] == c)) {
      continue;
    }
    bool written = false;
    for (const auto& [pos, bytes] : n.since) {
      if (o >= pos && o < pos + bytes.size() && bytes[o - pos] == c) {
        written = true;
        break;
      }
    }
    if (!written) {
      return "byte " + std::to_string(o) + " is " + std::to_string(static_cast<uint8_t>(c)) +
             ": neither its value at the last fsync (zero past its size then) nor one written since";
    }
  }
  return "";
}

}  // namespace folio::fuse::test
