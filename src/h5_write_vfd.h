/* h5_write_vfd.h - HDF5's file driver of the serial writer: HDF5's writes go to the
 * library's own output at their offsets, and a failed write is kept for the writer */
#ifndef SX_H5_WRITE_VFD_H
#define SX_H5_WRITE_VFD_H

#include <hdf5.h>
#include <stdbool.h>

/*
 * What the driver shares with the writer. HDF5 never sees a write fail: libhdf5
 * 1.10 leaves a file whose write or close failed (a full disk, a size limit) half
 * closed, and its exit handler then crashes on it, in a host process too. The
 * first failure is kept in 'werr' instead, and the writer reports it once HDF5
 * has closed the file. Once 'frozen', writes are dropped: the file is what it was
 * when the writer froze it, whatever HDF5 writes as it closes.
 */
struct sx_h5vfd {
    int fd;       /* the output's descriptor (the writer's; never closed here) */
    int werr;     /* errno of the first failed write or read, or 0 */
    bool nomem;   /* an allocation of the driver failed (HDF5 reports it as I/O) */
    bool frozen;  /* writes are dropped */
    haddr_t eoa;  /* HDF5's end of the allocated space: the file's length */
    hid_t driver; /* the registered driver, or H5I_INVALID_HID */
};

/* Register the driver for one writer and select it in 'fapl', over 's->fd':
 * 0, or negative (HDF5's error) with nothing registered. */
herr_t sx_h5vfd_use(struct sx_h5vfd *s, hid_t fapl);

/* Unregister the driver, once no file of it is open. */
void sx_h5vfd_drop(struct sx_h5vfd *s);

#endif /* SX_H5_WRITE_VFD_H */
