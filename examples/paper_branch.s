; The branch listing of the HTS paper (section V-D), corrected.
; (Its first line has eight fields as printed: a control instruction may omit metadata.)
;
; As printed, the paper's second line reads "real_fir 102 13 2 0 0 0 0000": eight fields
; where nine are needed (paper_branch_malformed.s keeps it, to show the error). The rest
; of the listing reuses the regions of the independent-tasks listing, whose first line is
; "real_fir 10 2 13 2 ...": the printed line lost the space between 10 and 2.
;
; The if is a memory-read branch (K = d: K[3] memory, K[2] speculate, K[1:0] = NEQ): if
; the first word of block 93 differs from r10 (= 3), jump 12 (18 decimal) instructions
; ahead, past the end of this 12-instruction program, which ends it.
mov 3 0 a 00 0 0 0001
real_fir 10 2 13 2 0 0 0 0000
complex_fir 16 2 19 2 1 0 0 0000
if 93 a 12 0 1 0 d 0000
adaptive_fir 23 3 28 3 2 0 0 0000
iir 32 3 36 3 3 0 0 0000
vector_dot 40 4 48 4 4 0 0 0000
vector_add 55 4 62 4 5 0 0 0000
vector_max 68 5 76 5 6 0 0 0000
fft_256 84 6 93 6 7 0 0 0000
dct_64 102 2 106 2 8 0 0 0000
correlation 110 3 115 3 9 0 0 0000
