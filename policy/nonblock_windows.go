package policy

// nonBlock is nothing on Windows, which has no FIFOs in the file system.
const nonBlock = 0
