; Every simple command node. The walk must visit each one; the analysis counts these nodes
; and treats a script whose walk saw fewer as not understood (fail closed).
; The count is taken by src/parse.rs in its one pass over the tree (compiling this query
; cost a fifth of a one-call process); its tests hold that pass to this query.

(command) @command
