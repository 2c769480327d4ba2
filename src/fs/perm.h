// Permission rules of the Folio FS core, as the Linux kernel applies them (fs/namei.c
// generic_permission, fs/attr.c setattr_prepare / notify_change, fs/inode.c inode_init_owner,
// may_delete's sticky-directory check). Pure functions over inodes and a Cred; each returns OK
// or a Status with the errno the system call would fail with.
//
// root (uid 0) stands for a caller with every capability (CAP_DAC_OVERRIDE, CAP_FOWNER,
// CAP_CHOWN, CAP_FSETID, CAP_MKNOD): it may read and write anything and search any directory,
// and execute a file only if some execute bit is set.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "folio/status.h"
#include "fs/fs_types.h"

namespace folio::fs {

inline constexpr int kMayExec = 1;
inline constexpr int kMayWrite = 2;
inline constexpr int kMayRead = 4;

// EACCES unless cred may access inode for every bit of mask (kMay*).
Status CheckAccess(const meta::Inode& inode, const Cred& cred, int mask);

// May cred remove or rename away `victim` from directory `dir` (write + search on dir, and the
// sticky rule: in a sticky directory only the owner of the file or of the directory, or root)?
Status CheckDelete(const meta::Inode& dir, const meta::Inode& victim, const Cred& cred);

// Whether cred owns the inode or is root (CAP_FOWNER): chmod, utimes to explicit values.
bool IsOwnerOrRoot(const meta::Inode& inode, const Cred& cred);

// Applies a setattr's mode / owner / time changes to *inode after checking them the way
// setattr_prepare does (EPERM / EACCES), clearing set-user-ID and set-group-ID as
// notify_change does on chown and chmod. Size is not handled here (see the data path); times
// are set from now_ns for TimeSet::kNow. Sets ctime to now_ns when anything changes.
Status ApplySetAttr(const SetAttrRequest& req, const Cred& cred, int64_t now_ns,
                    meta::Inode* inode);

// The mode bits a file's write or truncate by cred leaves: set-user-ID always cleared, and
// set-group-ID when group-execute is set (should_remove_suid), unless cred is root.
// Returns the (possibly unchanged) mode.
uint32_t ModeAfterWrite(const meta::Inode& inode, const Cred& cred);

// Owner, group and mode of a new inode of `type` created by cred in `dir` (inode_init_owner):
// group from a set-group-ID directory (and the bit inherited by directories), set-group-ID
// dropped from a non-directory whose group cred is not in.
void InitOwner(const meta::Inode& dir, const Cred& cred, meta::Inode* inode);

// ENAMETOOLONG over 255 bytes; EINVAL for an empty name or one with '/' or NUL.
Status CheckName(std::string_view name);

}  // namespace folio::fs
