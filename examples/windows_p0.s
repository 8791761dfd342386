; Process 0 of examples/windows.yaml: every region inside its window [0x000, 0x100).
real_fir   10 1 20 1 0 0 0 0
vector_add 20 1 30 1 1 0 0 0
real_fir   30 1 40 1 2 0 0 0
