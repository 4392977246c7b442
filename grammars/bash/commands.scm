; Every simple command node. The walk must visit each one; the analysis counts the captures
; and treats a script whose walk saw fewer as not understood (fail closed).

(command) @command
