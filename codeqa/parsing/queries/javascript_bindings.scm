; JavaScript: a base class; inside the class, `this` is also the base.
(class_heritage
  (identifier) @type.base)

(class_heritage
  (member_expression
    property: (property_identifier) @type.base))
