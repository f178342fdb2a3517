/* MPI_Comm_spawn whose children outlive their parents: the parents spawn 2
 * copies of this program and disconnect at once; each child disconnects,
 * prints "child C start" on stdout and "child C err" on stderr, sleeps 2 s,
 * prints "child C end" and exits with status 5 (child 1) or 0. The
 * launcher is to wait for the children and exit with the first non-zero
 * status, as prterun does. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (parent == MPI_COMM_NULL) {
        int errs[2];
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                       MPI_COMM_WORLD, &inter, errs);
        printf("parent %d spawned\n", rank);
        MPI_Comm_disconnect(&inter);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_disconnect(&parent);
    printf("child %d start\n", rank);
    fflush(stdout);
    fprintf(stderr, "child %d err\n", rank);
    fflush(stderr);
    sleep(2);
    printf("child %d end\n", rank);
    fflush(stdout);
    MPI_Finalize();
    return rank == 1 ? 5 : 0;
}
