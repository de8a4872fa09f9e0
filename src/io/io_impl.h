/* io_impl.h — the map of src/io (not installed).  It declares nothing: each
 * file below has its own header, public (src/attncheck/) or private (here).
 *
 * Files of src/io/ (this map; tests/docs.sh checks it against local.mk):
 *   npy.c          NumPy .npy files of float64 arrays: arrays, data, writing
 *                  (attncheck/npy.h)
 *   npy_header.c   the parser of the header dict of a .npy file
 *   npz.c          one array of a NumPy .npz archive
 *   npy_impl.h     the internals these three share
 *   fileio.c       atomic output files, directory creation, whole-file
 *                  reading (attncheck/fileio.h)
 *   stagedir.c     staged output directories, swapped or merged in whole
 *   reslimits.c    the memory a run may use
 *   json.c         the streaming JSON writer and round-trip formatting of
 *                  doubles (attncheck/json.h)
 *   jsonparse.c, jsonparse.h  a small JSON reader for the files attncheck
 *                  writes itself (checkpoint configurations)
 *   sumjson.c, sumjson.h  JSON files ending with their own FNV-1a checksum
 *                  (the shard files of condition and inspect)
 *   io_impl.h      this map
 *   test/          the unit tests, one Check program per file:
 *     test_npy.c        .npy reading, round trips, bad and tampered files
 *                       (.npz archives: tests/npy_numpy.py against NumPy's
 *                       own);
 *     test_fileio.c     output files, write errors, atomic files and
 *                       staged directories;
 *     npy_testutil.h    their scratch directory, helpers and main;
 *     test_json.c       the writer: exact output, escaping, number round
 *                       trips, misuse and write errors;
 *     test_jsonparse.c  the reader: every kind of value, malformed documents.
 */
#ifndef AC_IO_IO_IMPL_H
#define AC_IO_IO_IMPL_H
#endif /* AC_IO_IO_IMPL_H */
