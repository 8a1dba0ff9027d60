; Bash and other POSIX shells: functions and the commands that call them.

(function_definition
  name: (word) @name.definition.function) @definition.function

; Every command is a call; only those naming a function of the repo resolve.
(command
  name: (command_name
    (word) @name.reference.call))

; Sourced files: . ./lib.sh, source lib.sh
(command
  name: (command_name
    (word) @_source)
  argument: [(word) (string (string_content)) (raw_string)] @module.import
  (#match? @_source "^(source|\\.)$"))
