/* Initialises MPI, says so (creates the file argv[1] once every rank is
 * past MPI_Init), waits until the file argv[2] exists (at most 60 s), then
 * adds the ranks with MPI_Allreduce: "rank R of N sum S". A test lets the
 * DVM send events meanwhile. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, i;

    if (argc < 3) {
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(argv[1], "w");
        if (f) {
            fclose(f);
        }
    }
    for (i = 0; i < 600 && access(argv[2], F_OK) != 0; i++) {
        usleep(100000);
    }
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
