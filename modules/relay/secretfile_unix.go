//go:build unix

package relay

import "syscall"

// oNoFollow makes the open fail on a symbolic link in the last component.
// O_EXCL already refuses one; this keeps the refusal if O_EXCL is dropped.
const oNoFollow = syscall.O_NOFOLLOW
